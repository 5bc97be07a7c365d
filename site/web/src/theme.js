// The editor's colours come from the page's CSS variables (style.css), so it follows the light or
// dark scheme and uses the same token colours as the highlighted code in chapters.
import { EditorView } from "@codemirror/view";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

const style = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword, t.operatorKeyword], color: "var(--code-keyword)" },
  { tag: [t.function(t.variableName), t.function(t.definition(t.variableName)), t.definition(t.className), t.className], color: "var(--code-function)" },
  { tag: [t.string, t.special(t.string), t.docString], color: "var(--code-string)" },
  { tag: [t.number, t.bool, t.null], color: "var(--code-number)" },
  { tag: [t.comment, t.lineComment], color: "var(--code-comment)", fontStyle: "italic" },
  { tag: [t.standard(t.variableName), t.self], color: "var(--code-builtin)" },
  { tag: t.invalid, color: "var(--bad)" },
]);

export const editorTheme = [
  EditorView.theme({
    "&": { color: "var(--fg)", backgroundColor: "var(--bg)" },
    ".cm-content": { caretColor: "var(--fg)" },
    ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--fg)" },
    ".cm-gutters": { backgroundColor: "var(--panel)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
    ".cm-activeLine": { backgroundColor: "var(--active-line)" },
    ".cm-activeLineGutter": { backgroundColor: "var(--active-line)", color: "var(--fg)" },
    "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": { backgroundColor: "var(--selection) !important" },
    ".cm-matchingBracket": { backgroundColor: "var(--selection)", outline: "1px solid var(--muted)" },
    ".cm-tooltip, .cm-panels": { backgroundColor: "var(--panel)", color: "var(--fg)", border: "1px solid var(--line)" },
    ".cm-foldPlaceholder": { backgroundColor: "var(--panel)", color: "var(--fg)", border: "1px solid var(--line)" },
  }),
  syntaxHighlighting(style),
];
