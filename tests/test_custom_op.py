"""CustomOp (mini_platform/model/custom_op.py): in-tree layers registered under vLLM's names, replaced by a plugin's
subclass through register_oot (keyed by the in-tree class name, as in vLLM), the forward chosen per platform, and
registrations that fail with a message instead of replacing nothing."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from mini_platform import platforms
from mini_platform.model.custom_op import CustomOp
from mini_platform.model.layers import RMSNorm, RotaryEmbedding


@pytest.fixture(autouse=True)
def oot_registry():
    """Each test starts with no replacement and leaves none behind (the registry is process-wide)."""
    saved = dict(CustomOp.op_registry_oot)
    CustomOp.clear_oot()
    yield
    CustomOp.clear_oot()
    CustomOp.op_registry_oot.update(saved)


def out_of_tree(monkeypatch) -> None:
    """Make the current platform an out-of-tree one for the layers built next."""
    platform = SimpleNamespace(is_out_of_tree=lambda: True, kernel_backend="cpu")
    monkeypatch.setattr(platforms, "_current", SimpleNamespace(get=lambda: platform))


class PluginNorm(RMSNorm):
    def forward_oot(self, x, residual=None):
        return "plugin"


def test_in_tree_layers_carry_vllm_names_and_keep_their_parameters():
    assert CustomOp.op_registry["rms_norm"] is RMSNorm and RMSNorm.name == "rms_norm"
    assert CustomOp.op_registry["rotary_embedding"] is RotaryEmbedding
    norm = RMSNorm(8, 1e-6, torch.float32)
    assert type(norm) is RMSNorm and list(norm.state_dict()) == ["weight"]
    assert norm._forward_method == norm.forward_native   # the CPU platform is in tree
    x = torch.randn(3, 8)
    norm.weight.data.fill_(1.0)
    torch.testing.assert_close(norm(x), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def test_register_oot_replaces_the_in_tree_class_wherever_it_is_built(monkeypatch):
    assert CustomOp.register_oot(PluginNorm, name="RMSNorm") is PluginNorm
    norm = RMSNorm(8, 1e-6, torch.float32)
    assert type(norm) is PluginNorm and norm.eps == 1e-6 and list(norm.state_dict()) == ["weight"]
    assert type(PluginNorm(8, 1e-6, torch.float32)) is PluginNorm
    assert type(RotaryEmbedding(8, 16, 10000.0, None)) is RotaryEmbedding   # other ops are left alone
    assert norm(torch.ones(2, 8)).shape == (2, 8)              # an in-tree platform runs forward_native
    out_of_tree(monkeypatch)
    assert RMSNorm(8, 1e-6, torch.float32)(torch.ones(2, 8)) == "plugin"   # an out-of-tree one runs forward_oot
    rope = RotaryEmbedding(8, 16, 10000.0, None)   # not replaced: forward_oot falls back to forward_native
    q, k = torch.randn(3, 16), torch.randn(3, 8)
    assert rope._forward_method == rope.forward_oot
    for got, want in zip(rope(torch.arange(3), q, k), rope.forward_native(torch.arange(3), q, k)):
        assert torch.equal(got, want)


def test_register_oot_as_decorators_and_again_is_a_no_op():
    @RMSNorm.register_oot
    class ByClass(RMSNorm):
        pass

    assert CustomOp.op_registry_oot == {"RMSNorm": ByClass}
    CustomOp.register_oot(_decorated_op_cls=ByClass, name="RMSNorm")   # vllm-ascend's call, again: nothing changes
    CustomOp.clear_oot()
    assert type(RMSNorm(8, 1e-6, torch.float32)) is RMSNorm

    @CustomOp.register_oot(name="RotaryEmbedding")
    class Rope(RotaryEmbedding):
        pass

    assert type(RotaryEmbedding(8, 16, 10000.0, None)) is Rope


def test_a_fresh_import_of_the_same_class_counts_as_the_same():
    CustomOp.register_oot(PluginNorm, name="RMSNorm")
    again = type("PluginNorm", (RMSNorm,), {"__module__": PluginNorm.__module__, "__qualname__": PluginNorm.__qualname__})
    CustomOp.register_oot(again, name="RMSNorm")
    assert CustomOp.op_registry_oot["RMSNorm"] is again


@pytest.mark.parametrize("call, error, words", [
    (lambda: CustomOp.register_oot(PluginNorm, name="rms_norm"), ValueError, "in-tree class name, 'RMSNorm'"),
    (lambda: CustomOp.register_oot(PluginNorm, name="LayerNorm"), ValueError, "no in-tree CustomOp class is named 'LayerNorm'"),
    (lambda: CustomOp.register_oot(PluginNorm), ValueError, "needs name="),
    (lambda: CustomOp.register_oot(torch.nn.LayerNorm, name="RMSNorm"), TypeError, "takes a CustomOp subclass"),
    (lambda: CustomOp.register_oot(type("Loose", (CustomOp,), {}), name="RMSNorm"), TypeError, "must subclass RMSNorm"),
    (lambda: CustomOp.register("rms_norm")(type("Other", (CustomOp,), {})), ValueError, "already the registered name"),
])
def test_bad_registrations_say_what_is_wrong(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()
    assert CustomOp.op_registry_oot == {} and CustomOp.op_registry["rms_norm"] is RMSNorm


def test_two_classes_cannot_replace_one_op():
    CustomOp.register_oot(PluginNorm, name="RMSNorm")
    other = type("OtherNorm", (RMSNorm,), {})
    with pytest.raises(ValueError, match="already replaced by .*PluginNorm.*clear_oot"):
        CustomOp.register_oot(other, name="RMSNorm")
    assert CustomOp.op_registry_oot["RMSNorm"] is PluginNorm
