"""Load a Hugging Face checkpoint directory (``config.json`` + ``*.safetensors``) into a :class:`CausalLM`.

A sharded checkpoint has ``model.safetensors.index.json`` whose ``weight_map`` names the file of
each tensor; otherwise every ``*.safetensors`` file in the directory is read. Each checkpoint tensor
must land in exactly one place of the model (a whole parameter or its rows of a merged one):
a tensor the model needs but the files lack, or one the files have but no parameter takes, is an error.
Under tensor parallelism each rank reads only its shard of a split tensor (a safetensors slice).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from .config import ModelConfig, read_json_object
from .layers import MergedLinear, Shard, VocabParallelEmbedding
from .llama import CausalLM

INDEX_FILE = "model.safetensors.index.json"
EMBEDDING, LM_HEAD = "model.embed_tokens.weight", "lm_head.weight"
# Buffers some old checkpoints carry that are recomputed from the config, never loaded.
IGNORED_SUFFIXES = (".rotary_emb.inv_freq",)


class CheckpointError(ValueError):
    """The checkpoint's files do not match what its config describes."""


def checkpoint_slices(model: CausalLM) -> dict[str, tuple[torch.Tensor, Shard | None]]:
    """Checkpoint tensor name -> ``(view of the parameter it fills, the shard of it to read)``; a shard of
    None means the whole tensor. Under tensor parallelism a rank's views are smaller than the tensors."""
    slices = {}
    for module_name, module in model.named_modules():
        if hasattr(module, "checkpoint_slices"):  # a module with its own mapping (the MoE block's stacked experts)
            slices.update(module.checkpoint_slices(module_name))
            continue
        for param_name, param in module.named_parameters(recurse=False):
            if isinstance(module, MergedLinear):
                parent = module_name.rpartition(".")[0]
                for part, rows in module.part_rows().items():
                    slices[f"{parent}.{part}.{param_name}"] = _held(param.data[rows], module.shards[part])
            else:  # a parallel layer's `shard` covers its weight; biases and norms are whole on every rank
                shard = getattr(module, "shard", None) if param_name == "weight" else None
                slices[f"{module_name}.{param_name}"] = _held(param.data, shard)
    return slices


def checkpoint_targets(model: CausalLM) -> dict[str, torch.Tensor]:
    """Checkpoint tensor name -> the (view of the) parameter it is copied into."""
    return {name: view for name, (view, _) in checkpoint_slices(model).items()}


def _held(view: torch.Tensor, shard: Shard | None) -> tuple[torch.Tensor, Shard | None]:
    """Trim a parameter to the rows the checkpoint has (a padded vocabulary's last rows stay zero)."""
    if shard is None:
        return view, None
    return view.narrow(shard.dim, 0, min(view.shape[shard.dim], shard.size - shard.start)), shard


def checkpoint_files(path: str | Path) -> list[Path]:
    """The safetensors files of a checkpoint directory (from the shard index when there is one)."""
    path = Path(path)
    index = path / INDEX_FILE
    if index.is_file():
        weight_map = read_json_object(index).get("weight_map")
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


def _copy(name: str, source: Any, target: torch.Tensor, file: Path, shard: Shard | None = None) -> None:
    """Copy checkpoint tensor ``name`` into ``target``. ``source`` is a tensor or a lazy safetensors slice;
    with a shard only its rows are read."""
    shape = tuple(source.get_shape()) if hasattr(source, "get_shape") else tuple(source.shape)
    expected = list(target.shape)
    if shard is not None:
        expected[shard.dim] = shard.size
    if shape != tuple(expected):
        raise CheckpointError(f"tensor {name} in {file.name} has shape {shape}, but the "
                              f"config implies {tuple(expected)}; does config.json match the weights?")
    if shard is not None:
        index = [slice(None)] * len(shape)
        index[shard.dim] = slice(shard.start, shard.start + target.shape[shard.dim])
        source = source[tuple(index)]
    target.copy_(source)


def _settle_tied_lm_head(model: CausalLM, tensor: torch.Tensor, file: Path, loaded: set[str]) -> None:
    """A checkpoint with tied embeddings that stores ``lm_head.weight`` anyway, handled as transformers does:
    it stands in for missing embeddings; if it differs from the embeddings, the config's tying is wrong and
    the model gets its own lm_head."""
    embedding, shard = checkpoint_slices(model)[EMBEDDING]
    if EMBEDDING not in loaded:
        _copy(LM_HEAD, tensor, embedding, file, shard)
        loaded.add(EMBEDDING)
    elif tensor.shape != (shard.size, embedding.shape[1]) or not torch.equal(
            tensor.to(embedding.dtype).narrow(0, shard.start, embedding.shape[0]), embedding):
        with torch.device(embedding.device):
            model.lm_head = VocabParallelEmbedding(model.config.vocab_size, model.config.hidden_size, embedding.dtype)
        head, head_shard = checkpoint_slices(model)[LM_HEAD]
        _copy(LM_HEAD, tensor, head, file, head_shard)


def ignored_tensors(model: CausalLM) -> set[str]:
    """Checkpoint names the model may hold without loading them (MoE: other ranks' experts, a zero-size shared expert)."""
    return {name for module_name, module in model.named_modules() if hasattr(module, "ignored_checkpoint_tensors")
            for name in module.ignored_checkpoint_tensors(module_name)}


def _extra_layer_prefix(model: CausalLM) -> str | None:
    """DeepSeek-V3 checkpoints append their multi-token-prediction module as one more layer
    (``model.layers.61.*`` after 61 layers); the model does not run it (transformers ignores it too)."""
    if model.config.architecture != "DeepseekV3ForCausalLM":
        return None
    return f"model.layers.{model.config.num_hidden_layers}."


def load_weights(model: CausalLM, path: str | Path) -> None:
    """Copy every tensor of the checkpoint at ``path`` into ``model`` (cast to its dtype and device), then let each
    module that has one run its ``process_weights_after_loading`` (MLA splits ``kv_b_proj`` there)."""
    targets, ignored, extra_layer = checkpoint_slices(model), ignored_tensors(model), _extra_layer_prefix(model)
    loaded, unexpected, tied_lm_head = set(), [], None
    for file in checkpoint_files(path):
        try:
            with safe_open(str(file), framework="pt", device="cpu") as f:
                for name in f.keys():
                    target = targets.get(name)
                    if name == LM_HEAD and model.lm_head is None:
                        tied_lm_head = (f.get_tensor(name), file)
                    elif target is not None:
                        view, shard = target
                        _copy(name, f.get_tensor(name) if shard is None else f.get_slice(name), view, file, shard)
                        loaded.add(name)
                    elif not (name.endswith(IGNORED_SUFFIXES) or name in ignored
                              or (extra_layer and name.startswith(extra_layer))):
                        unexpected.append(name)
        except (SafetensorError, OSError) as exc:
            raise CheckpointError(f"{file} is not a readable safetensors file ({exc}); it may be empty or "
                                  "truncated: download or save it again") from exc
    if tied_lm_head is not None:
        _settle_tied_lm_head(model, *tied_lm_head, loaded)
    missing = sorted(set(targets) - loaded)
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks tensor(s) that {model.config.architecture} needs: "
                              f"{_listing(missing)}")
    if unexpected:
        raise CheckpointError(f"checkpoint {path} has tensor(s) that no parameter of {model.config.architecture} "
                              f"takes: {_listing(sorted(unexpected))}; does config.json match the weights?")
    for module in model.modules():
        if hasattr(module, "process_weights_after_loading"):
            module.process_weights_after_loading()


def load_model(path: str | Path, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu", expert_map: torch.Tensor | None = None,
               max_positions: int | None = None) -> CausalLM:
    """Build the model that ``<path>/config.json`` describes and load its safetensors weights (with an
    ``expert_map``, only the experts it owns; see :class:`~.llama.CausalLM`). ``max_positions`` sizes the
    RoPE table (default: the config's ``max_position_embeddings``)."""
    config = ModelConfig.from_pretrained(path)
    with torch.device(device):
        model = CausalLM(config, dtype, expert_map, max_positions)
    load_weights(model, path)
    return model.eval()
