"""The capstone harness (practice/capstone/harness.py): a plugin project is installed into a temporary
site directory, never into the running environment, the way pip lays out a pure-Python wheel."""
from __future__ import annotations

import importlib.util
import sys
import tempfile
from importlib.metadata import distributions
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "practice"))
from capstone import harness  # noqa: E402


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_install_leaves_the_project_and_the_environment_alone():
    before = snapshot(harness.REFERENCE)
    site = harness.install(harness.REFERENCE)
    assert snapshot(harness.REFERENCE) == before
    assert Path(tempfile.gettempdir()) in site.parents
    assert str(site) not in sys.path and importlib.util.find_spec("lumen_npu") is None
    [dist] = distributions(path=[str(site)])
    assert dist.metadata["Name"] == "lumen-npu"
    assert {(ep.group, ep.name, ep.value) for ep in dist.entry_points} == {
        ("mini_platform.platform_plugins", "lumen", "lumen_npu:register"),
        ("mini_platform.general_plugins", "lumen_kernels", "lumen_npu:register_kernels"),
        ("mini_platform.general_plugins", "lumen_ops", "lumen_npu:register_ops")}
    assert (site / "lumen_npu" / "ops" / "layernorm.py").is_file()


def test_install_takes_only_the_listed_packages():
    project = harness.mutate(harness.REFERENCE, "pyproject.toml", 'packages = ["lumen_npu", "lumen_npu.ops"]',
                             'packages = ["lumen_npu"]')
    site = harness.install(project)
    assert (site / "lumen_npu" / "platform.py").is_file()
    assert not (site / "lumen_npu" / "ops").exists()


def test_a_missing_project_says_how_to_make_one(monkeypatch, tmp_path):
    monkeypatch.setattr(harness, "REPO", tmp_path)  # a clone where the learner has not made a copy yet
    with pytest.raises(harness.ProjectError, match="cp -r practice/capstone/starter practice/workspace/lumen-npu"):
        harness.project_dir(harness.WORKSPACE_PROJECT)
    with pytest.raises(harness.ProjectError, match="no pyproject.toml"):
        harness.install(Path(tempfile.mkdtemp()))


def test_a_wrong_solution_changes_exactly_one_place():
    with pytest.raises(ValueError, match="occurs 0 times"):
        harness.mutate(harness.REFERENCE, "lumen_npu/platform.py", "no such text", "x")
    copy = Path(harness.mutate(harness.REFERENCE, "lumen_npu/platform.py", 'kernel_backend = "lumen"',
                               'kernel_backend = "cpu"'))
    assert 'kernel_backend = "cpu"' in (copy / "lumen_npu" / "platform.py").read_text()
    assert 'kernel_backend = "lumen"' in (harness.REFERENCE / "lumen_npu" / "platform.py").read_text()


@pytest.fixture
def lumen(monkeypatch):
    """The reference Lumen plugin as this process's platform (and, through the environment and sys.path
    they inherit, the platform of any worker it spawns); everything is put back afterwards."""
    from mini_platform import ops, platforms, plugins
    from mini_platform.model.custom_op import CustomOp
    monkeypatch.setattr(sys, "path", list(sys.path))  # activate() edits sys.path in place
    for name in ("MINI_PLATFORM_PLUGINS", "MINI_PLATFORM_TARGET_DEVICE", "MINI_PLATFORM_KERNEL_BACKEND",
                 "LUMEN_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LUMEN_DEVICE_ROOT", str(harness.fake_device_root("lumen0", "lumen1")))
    monkeypatch.setenv("MINI_PLATFORM", "lumen")
    harness.activate(harness.install(harness.REFERENCE))
    yield
    platforms.clear_current_platform()
    plugins.clear_general_plugins()
    ops.unregister_backend(harness.KERNEL_BACKEND)
    CustomOp.clear_oot()
    harness.forget_custom_ops()


def test_tensor_parallel_on_a_graph_mode_platform_works_by_default(lumen):
    """Lumen's default is decode graphs (it names a graph wrapper): TP=2 with enforce_eager unset must run,
    its workers capturing the graphs with the all-reduces inside, and match transformers."""
    import multiprocessing

    from mini_platform import LLM, SamplingParams, platforms
    prompts = ((1, 17, 42, 99, 7), (1, 5), tuple(range(3, 43)))
    path, expected = harness.tiny_llama(prompts, 6)
    with LLM(path, tensor_parallel_size=2, block_size=32, num_kv_blocks=16, max_num_seqs=4) as llm:
        assert type(platforms.current_platform).__name__ == "LumenPlatform"
        outputs = llm.generate([list(p) for p in prompts], SamplingParams(temperature=0, max_tokens=6, ignore_eos=True))
        stats = llm.engine.stats()
    assert stats["cudagraph_capture_sizes"] == [1, 2, 4] and stats["num_graph_steps"] > 0   # up to max_num_seqs
    assert [o.token_ids for o in outputs] == expected
    assert not multiprocessing.active_children()


def test_forgetting_a_projects_custom_ops_leaves_the_next_projects_alone():
    """activate() undefines the lumen:: ops an earlier project defined, so that the next one defines its own; the old
    library's finalizer, run whenever the old project is collected, must not touch the new op of the same name."""
    import gc

    import torch

    def define(scale: float):
        def probe(x):
            return x * scale
        return torch.library.custom_op("lumen::probe", probe, mutates_args=(), schema="(Tensor x) -> Tensor")

    old = define(2.0)
    harness.forget_custom_ops()
    assert not hasattr(torch.ops.lumen, "probe")
    define(3.0)
    packet = torch.ops.lumen.probe
    del old
    gc.collect()
    assert torch.ops.lumen.probe is packet, "torch.ops' cache of the new op was dropped (a compiled model would recompile)"
    assert torch.equal(torch.ops.lumen.probe(torch.ones(2)), torch.full((2,), 3.0))
    harness.forget_custom_ops()


def test_the_vendor_files_given_whole_are_the_same_in_the_starter_and_the_reference():
    """The Lumen driver (C++ extension, its build, the CPU-view fallback) is given complete in both projects, so that
    a learner's project builds and runs like the reference; a fix made in one copy must reach the other."""
    for name in ("csrc/lumen.cpp", "_extension.py", "fallback.py"):
        starter, reference = (harness.SKELETON / "lumen_npu" / name), (harness.REFERENCE / "lumen_npu" / name)
        assert starter.read_bytes() == reference.read_bytes(), name
