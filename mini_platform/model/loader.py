"""Load a Hugging Face checkpoint directory (``config.json`` + ``*.safetensors``) into a :class:`CausalLM`.

A sharded checkpoint has ``model.safetensors.index.json`` whose ``weight_map`` names the file of
each tensor; otherwise every ``*.safetensors`` file in the directory is read. Each checkpoint tensor
must land in exactly one place of the model (a whole parameter or its rows of a merged one):
a tensor the model needs but the files lack, or one the files have but no parameter takes, is an error.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open

from .config import ModelConfig
from .layers import Linear, MergedLinear
from .llama import CausalLM

INDEX_FILE = "model.safetensors.index.json"
EMBEDDING, LM_HEAD = "model.embed_tokens.weight", "lm_head.weight"
# Buffers some old checkpoints carry that are recomputed from the config, never loaded.
IGNORED_SUFFIXES = (".rotary_emb.inv_freq",)


class CheckpointError(ValueError):
    """The checkpoint's files do not match what its config describes."""


def checkpoint_targets(model: CausalLM) -> dict[str, torch.Tensor]:
    """Checkpoint tensor name -> the (view of the) parameter it is copied into. A module with its own mapping
    (the MoE block's stacked experts) gives it with ``checkpoint_targets(prefix)``."""
    targets = {}
    for module_name, module in model.named_modules():
        if hasattr(module, "checkpoint_targets"):
            targets.update(module.checkpoint_targets(module_name))
            continue
        for param_name, param in module.named_parameters(recurse=False):
            if isinstance(module, MergedLinear):
                parent = module_name.rpartition(".")[0]
                for part, rows in module.part_rows().items():
                    targets[f"{parent}.{part}.{param_name}"] = param.data[rows]
            else:
                targets[f"{module_name}.{param_name}"] = param.data
    return targets


def checkpoint_files(path: str | Path) -> list[Path]:
    """The safetensors files of a checkpoint directory (from the shard index when there is one)."""
    path = Path(path)
    index = path / INDEX_FILE
    if index.is_file():
        weight_map = json.loads(index.read_text()).get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(f"{index} has no 'weight_map' object (tensor name -> shard file)")
        files = [path / name for name in sorted(set(weight_map.values()))]
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            raise CheckpointError(f"{index} names shard(s) that are not in {path}: {absent}")
        return files
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"no *.safetensors file in {path}; mini_platform reads only safetensors "
                              "checkpoints (convert pytorch_model.bin with transformers' save_pretrained)")
    return files


def _listing(names: list[str], limit: int = 6) -> str:
    more = f" ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _copy(name: str, tensor: torch.Tensor, target: torch.Tensor, file: Path) -> None:
    if tensor.shape != target.shape:
        raise CheckpointError(f"tensor {name} in {file.name} has shape {tuple(tensor.shape)}, but the "
                              f"config implies {tuple(target.shape)}; does config.json match the weights?")
    target.copy_(tensor)


def _settle_tied_lm_head(model: CausalLM, tensor: torch.Tensor, file: Path, loaded: set[str]) -> None:
    """A checkpoint with tied embeddings that stores ``lm_head.weight`` anyway, handled as transformers does:
    it stands in for missing embeddings; if it differs from the embeddings, the config's tying is wrong and
    the model gets its own lm_head."""
    embedding = model.model.embed_tokens.weight
    if EMBEDDING not in loaded:
        _copy(LM_HEAD, tensor, embedding.data, file)
        loaded.add(EMBEDDING)
    elif not torch.equal(tensor.to(embedding.dtype), embedding.data):
        with torch.device(embedding.device):
            model.lm_head = Linear(model.config.hidden_size, model.config.vocab_size, False, embedding.dtype)
        _copy(LM_HEAD, tensor, model.lm_head.weight.data, file)


def ignored_tensors(model: CausalLM) -> set[str]:
    """Checkpoint names the model may hold without loading them (MoE: other ranks' experts, a zero-size shared expert)."""
    return {name for module_name, module in model.named_modules() if hasattr(module, "ignored_checkpoint_tensors")
            for name in module.ignored_checkpoint_tensors(module_name)}


def load_weights(model: CausalLM, path: str | Path) -> None:
    """Copy every tensor of the checkpoint at ``path`` into ``model`` (cast to its dtype and device)."""
    targets, ignored = checkpoint_targets(model), ignored_tensors(model)
    loaded, unexpected, tied_lm_head = set(), [], None
    for file in checkpoint_files(path):
        with safe_open(str(file), framework="pt", device="cpu") as f:
            for name in f.keys():
                target = targets.get(name)
                if name == LM_HEAD and model.lm_head is None:
                    tied_lm_head = (f.get_tensor(name), file)
                elif target is not None:
                    _copy(name, f.get_tensor(name), target, file)
                    loaded.add(name)
                elif not name.endswith(IGNORED_SUFFIXES) and name not in ignored:
                    unexpected.append(name)
    if tied_lm_head is not None:
        _settle_tied_lm_head(model, *tied_lm_head, loaded)
    missing = sorted(set(targets) - loaded)
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks tensor(s) that {model.config.architecture} needs: "
                              f"{_listing(missing)}")
    if unexpected:
        raise CheckpointError(f"checkpoint {path} has tensor(s) that no parameter of {model.config.architecture} "
                              f"takes: {_listing(sorted(unexpected))}; does config.json match the weights?")


def load_model(path: str | Path, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu", expert_map: torch.Tensor | None = None) -> CausalLM:
    """Build the model that ``<path>/config.json`` describes and load its safetensors weights (with an
    ``expert_map``, only the experts it owns; see :class:`~.llama.CausalLM`)."""
    config = ModelConfig.from_pretrained(path)
    with torch.device(device):
        model = CausalLM(config, dtype, expert_map)
    load_weights(model, path)
    return model.eval()
