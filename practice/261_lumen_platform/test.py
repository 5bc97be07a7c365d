"""Stage 261: LumenPlatform's identity, block-size rule, components and forwarding; selection by the rules."""
import importlib
from types import SimpleNamespace

import pytest

import submission
from capstone import harness
from mini_platform import platforms
from mini_platform.model.paged_attention import PagedAttention
from mini_platform.platforms import PlatformResolutionError
from mini_platform.utils import resolve_obj_by_qualname

PLATFORM = "lumen_npu.platform.LumenPlatform"
BUILT_IN = ("mini_platform.platforms.cpu.CpuPlatform", "mini_platform.platforms.cuda.CudaPlatform")


@pytest.fixture(scope="module")
def site():
    site = harness.install(submission.PROJECT)
    harness.activate(site)
    return site


@pytest.fixture
def devices(site, monkeypatch):
    """Two Lumen devices under a fake root; no selection variables set."""
    for name in ("MINI_PLATFORM", "MINI_PLATFORM_PLUGINS", "MINI_PLATFORM_TARGET_DEVICE", "LUMEN_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LUMEN_DEVICE_ROOT", str(harness.fake_device_root("lumen0", "lumen1", "lumen_ctl")))
    platforms.clear_current_platform()
    yield
    platforms.clear_current_platform()


@pytest.fixture
def lumen(devices):
    """The platform as the engine sees it: an instance (``current_platform``)."""
    return resolve_obj_by_qualname(PLATFORM)()


def test_example_selected_by_name(devices):
    assert platforms.resolve_current_platform_cls_qualname({"MINI_PLATFORM": "lumen"}) == PLATFORM


def test_the_only_available_out_of_tree_plugin_wins(devices):
    assert platforms.resolve_current_platform_cls_qualname({}) == PLATFORM


@pytest.mark.parametrize("allowed, chosen", [("", False), ("ascend", False), ("lumen", True), ("ascend,lumen", True)])
def test_the_allow_list_decides(devices, allowed, chosen):
    result = platforms.resolve_current_platform_cls_qualname({"MINI_PLATFORM_PLUGINS": allowed})
    assert result == PLATFORM if chosen else result in BUILT_IN


def test_without_a_device_it_is_not_chosen_and_cannot_be_selected(devices, monkeypatch):
    monkeypatch.setenv("LUMEN_DEVICE_ROOT", str(harness.fake_device_root("lumen_ctl")))
    assert platforms.resolve_current_platform_cls_qualname({}) in BUILT_IN
    with pytest.raises(PlatformResolutionError):
        platforms.resolve_current_platform_cls_qualname({"MINI_PLATFORM": "lumen"})


def test_forcing_it_in_the_environment_without_a_device_raises(devices, monkeypatch):
    monkeypatch.setenv("LUMEN_DEVICE_ROOT", str(harness.fake_device_root("lumen_ctl")))
    monkeypatch.setenv("MINI_PLATFORM", "lumen")  # in os.environ, where a detector could read it
    with pytest.raises(PlatformResolutionError):
        platform = platforms.current_platform
        pytest.fail(f"MINI_PLATFORM=lumen in os.environ, no lumen<N> node under LUMEN_DEVICE_ROOT, "
                    f"yet current_platform is {platform!r}: the selection is no device")


@pytest.mark.parametrize("attribute, expected", [
    ("device_name", "lumen"), ("dispatch_key", "PrivateUse1"), ("dist_backend", "gloo"),
    ("device_control_env_var", "LUMEN_VISIBLE_DEVICES"), ("ray_device_key", "LUMEN"), ("kernel_backend", "lumen"),
])
def test_identity(lumen, attribute, expected):
    assert getattr(lumen, attribute) == expected


def test_device_type_is_a_torch_device(lumen):
    """'cpu' while Lumen's tensors are CPU tensors (this stage), 'lumen' once stage 264 made Lumen a torch device."""
    assert lumen.device_type in ("cpu", "lumen"), f"device_type={lumen.device_type!r}"
    if lumen.device_type == "lumen":
        import torch
        try:
            torch.device("lumen")
        except RuntimeError as exc:
            raise AssertionError("device_type='lumen', but after importing lumen_npu.platform torch has no device "
                                 f"'lumen' ({exc}); the engine names it next (stage 264)") from None
        assert torch.lumen is importlib.import_module("lumen_npu.device"), "torch.lumen is not lumen_npu.device"


def test_it_is_out_of_tree(lumen):
    assert lumen.is_out_of_tree() and not lumen.is_cpu()


@pytest.mark.parametrize("block_size", [32, 64, 128])
def test_accepted_block_sizes(lumen, block_size):
    lumen.check_and_update_config(SimpleNamespace(block_size=block_size))


@pytest.mark.parametrize("block_size", [0, 16, 48, 96, 256])
def test_rejected_block_sizes(lumen, block_size):
    with pytest.raises(ValueError, match="block_size"):
        lumen.check_and_update_config(SimpleNamespace(block_size=block_size))


def test_attention_backend_is_lumens_own_paged_attention(lumen):
    assert lumen.get_attn_backend_cls() == "lumen_npu.attention.LumenAttention"
    assert issubclass(resolve_obj_by_qualname(lumen.get_attn_backend_cls()), PagedAttention)


def test_graph_wrapper_is_the_cpu_graph(lumen):
    from mini_platform.compilation.cpu_graph import CPUGraphWrapper
    name = lumen.get_static_graph_wrapper_cls()
    assert name is not None, "get_static_graph_wrapper_cls() returned None: the engine could only run eagerly"
    assert issubclass(resolve_obj_by_qualname(name), CPUGraphWrapper), \
        f"{name} is not the CPU graph wrapper (or, from stage 264 on, Lumen's subclass of it)"
    config = SimpleNamespace(block_size=32, enforce_eager=None)
    lumen.check_and_update_config(config)
    assert config.enforce_eager is False  # a platform with a graph wrapper runs decode graphs by default


def test_communicator_runs_over_gloo_on_host_tensors(lumen):
    from mini_platform.distributed.communicator import CpuCommunicator
    name = lumen.get_device_communicator_cls()
    assert issubclass(resolve_obj_by_qualname(name), CpuCommunicator), \
        f"{name} is not the CPU communicator (or, from stage 264 on, Lumen's subclass of it)"


def test_forwarding_reaches_the_lumen_runtime(devices, monkeypatch):
    monkeypatch.setenv("MINI_PLATFORM", "lumen")
    platform = platforms.current_platform
    assert type(platform).__name__ == "LumenPlatform"
    import lumen_npu.device
    assert platform.synchronize is lumen_npu.device.synchronize
    assert platform.device_count() == 2
    monkeypatch.setenv("LUMEN_VISIBLE_DEVICES", "1")
    assert platform.device_count() == 1
