// Pages of exercises judged locally (torch): language switch, statuses, hints, the copy button.
import { initHints, initSite } from "./site.js";

initSite();
initHints(JSON.parse(document.getElementById("exercise-data").textContent).id);
