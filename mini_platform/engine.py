"""The public engine: ``LLM`` for offline batches, ``LLMEngine`` for step-by-step streaming.

One engine step = the scheduler picks requests and token counts, the model runner runs them in one
packed forward over the paged KV cache, the sampler picks one token per request that reached its
last position, and the scheduler applies the result (stop conditions, freeing finished requests).
Every input is checked before any work is done: a bad request raises ``ValueError`` saying what to change.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import itertools
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

import torch

from . import envs, ops, platforms, plugins, sampler
from .compilation import capture_sizes as graph_sizes
from .compilation.config import CompilationConfig, parse_compilation_config
from .ascend.moe_comm import moe_comm_for_step
from .distributed.moe_dispatch import MOE_COMM_OPTIONS
from .executor.multiproc import MultiprocExecutor
from .executor.worker import WorkerConfig
from .kv_cache import KVCacheManager, cdiv
from .model import ModelConfig, load_model, sharding
from .model_runner import build_model_runner, decode_graph_size
from .sampler import SamplingParams, make_generator
from .scheduler import Request, Scheduler, SchedulerOutput

Prompt = Union[str, Sequence[int]]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
# Without num_kv_blocks, the cache gets room for max_num_seqs full-length requests, up to this size per rank. It is
# allocated uninitialised, so on a CPU the operating system backs only the pages requests actually write.
DEFAULT_KV_CACHE_BYTES = 1 << 30


@dataclass
class EngineConfig:
    model: str
    block_size: int = 16
    num_kv_blocks: int | None = None
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None  # None = the model's max_position_embeddings
    enable_prefix_caching: bool = True
    enable_chunked_prefill: bool = True
    dtype: str | torch.dtype = "float32"
    backend: str | None = None  # kernel backend: "cpu", "triton", "npu"; None = the platform's
    device: str | None = None   # None = the platform's device
    enforce_eager: bool | None = None  # None = the platform's default (eager on the CPU, graphs elsewhere)
    cudagraph_capture_sizes: list[int] | None = None  # None = vLLM's default schedule; only sizes <= max_num_seqs
    # {"cudagraph_mode": NONE | PIECEWISE | FULL | FULL_DECODE_ONLY | FULL_AND_PIECEWISE} (vLLM's names); None = as
    # enforce_eager says (full decode graphs when it is False). Piecewise modes keep every capture size (token counts).
    compilation_config: CompilationConfig | dict | None = None
    tensor_parallel_size: int = 1  # > 1: one worker process per rank (see mini_platform.executor)
    enable_expert_parallel: bool = False
    moe_comm: str = "alltoall"     # how EP exchanges tokens: "alltoall", "allgather" (all-gather + reduce-scatter),
    #                                "mc2" (Ascend's fused dispatch/combine) or "auto" (per step, vllm-ascend's rule)

    def __post_init__(self) -> None:
        for name in ("block_size", "max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size"):
            _check_positive_int(name, getattr(self, name))
        for name in ("num_kv_blocks", "max_model_len"):
            if getattr(self, name) is not None:
                _check_positive_int(name, getattr(self, name))
        if self.enforce_eager is not None and not isinstance(self.enforce_eager, bool):
            raise ValueError(f"enforce_eager must be True, False or None (the platform's default), "
                             f"got {self.enforce_eager!r}")
        if not isinstance(self.enable_expert_parallel, bool):
            raise ValueError(f"enable_expert_parallel must be True or False, got {self.enable_expert_parallel!r}")
        self.compilation_config = parse_compilation_config(self.compilation_config)
        piecewise = self.compilation_config is not None and self.compilation_config.needs_piecewise
        if self.compilation_config is not None and self.compilation_config.cudagraph_mode != "NONE":
            if self.enforce_eager:
                raise ValueError(f"enforce_eager=True contradicts compilation_config cudagraph_mode="
                                 f"{self.compilation_config.cudagraph_mode}; drop one of them")
            if piecewise and self.enable_expert_parallel:  # its token exchange is no custom op (data-dependent sizes)
                raise ValueError(f"compilation_config cudagraph_mode={self.compilation_config.cudagraph_mode} is not "
                                 "supported with enable_expert_parallel=True: the expert-parallel token exchange "
                                 "sends data-dependent row counts, which TorchDynamo cannot trace in one graph; use "
                                 "FULL_DECODE_ONLY or NONE, or tensor parallelism without expert parallelism")
        if self.cudagraph_capture_sizes is not None and piecewise:  # token counts: prefill and mixed steps use them
            self.cudagraph_capture_sizes = graph_sizes.capture_size_schedule(
                self.max_num_batched_tokens, self.max_num_seqs, self.cudagraph_capture_sizes)
        elif self.cudagraph_capture_sizes is not None:  # checked now; the sizes kept are those a decode step can use
            self.cudagraph_capture_sizes = graph_sizes.decode_capture_sizes(
                self.max_num_seqs, self.max_num_batched_tokens, self.cudagraph_capture_sizes)
        if self.moe_comm not in MOE_COMM_OPTIONS:
            raise ValueError(f"moe_comm={self.moe_comm!r} is not one of {MOE_COMM_OPTIONS}")
        for name in ("enable_prefix_caching", "enable_chunked_prefill"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not (Path(self.model) / "config.json").is_file():
            raise ValueError(f"model={self.model!r} is not a checkpoint directory with a config.json")


def _check_positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_block_size(block_size: int, backend: str) -> None:
    """Reject a block size the kernel backend cannot serve. A backend package states its rule as
    ``SUPPORTED_BLOCK_SIZES`` (absent: any size), whether it runs by default or was chosen explicitly."""
    sizes = getattr(importlib.import_module(ops.BACKEND_PACKAGES[backend]), "SUPPORTED_BLOCK_SIZES", None)
    if sizes is not None and block_size not in sizes:
        raise ValueError(f"block_size={block_size} is not supported by the {backend!r} kernel backend; "
                         f"use one of {list(sizes)}")


def resolve_device(device: str | torch.device) -> torch.device:
    """``device`` as a torch.device that exists in this process, or a ValueError saying what to use."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device={device!r} is not a torch device; use 'cpu', 'cuda', 'cuda:1', 'npu', ...") from None
    if resolved.type == "cpu":
        return resolved
    module = getattr(torch, resolved.type, None)
    count = module.device_count() if module is not None and module.is_available() else 0
    if count == 0 or (resolved.index or 0) >= count:
        raise ValueError(f"device={device!r}: this process sees {count} {resolved.type} device(s); "
                         "give one that exists, or device='cpu'")
    return resolved


def _check_backend_runs_here(backend: str, device: torch.device) -> None:
    """Fail now, saying what to do, when the kernel backend cannot run in this process."""
    if backend == "triton":
        if importlib.util.find_spec("triton") is None:
            raise ValueError("backend='triton' needs the triton package (pip install triton)")
        if device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            raise ValueError("backend='triton' with tensors on the CPU runs only in the Triton interpreter: set "
                             "TRITON_INTERPRET=1 before anything imports triton, or use a GPU (device='cuda')")
    elif backend == "npu":
        try:
            importlib.import_module("torch_npu")
        except ImportError:
            raise ValueError("backend='npu' needs torch_npu (Ascend's PyTorch adapter, with CANN) on an Ascend "
                             "machine; on other machines, build the engine inside "
                             "mini_platform.ascend.emulation.emulated_torch_npu() (a CPU emulation)") from None


def _check_moe_comm(config: EngineConfig, backend: str) -> None:
    """``mc2`` and ``auto`` are Ascend's: the npu backend, run eagerly (the emulated exchange cannot be captured)."""
    if config.moe_comm not in ("mc2", "auto"):
        return
    if backend != "npu":
        raise ValueError(f"moe_comm={config.moe_comm!r} is Ascend's (torch_npu's npu_moe_distribute_dispatch/combine, "
                         f"vllm-ascend's per-step rule) and needs backend='npu'; the {backend!r} backend exchanges "
                         "tokens with moe_comm='alltoall' or 'allgather'")
    graphs = config.compilation_config is not None and config.compilation_config.cudagraph_mode != "NONE"
    if config.enforce_eager is False or graphs:
        raise ValueError(f"moe_comm={config.moe_comm!r} runs eagerly here (a graph would freeze one step's method and "
                         "the emulated exchange cannot be captured); use enforce_eager=True and no compilation_config "
                         "graph mode")


def _is_token_id(value: Any) -> bool:
    return type(value) is int or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def _torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, str(dtype), None)
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(f"dtype={dtype!r} is not a torch floating-point dtype; use 'float32', 'bfloat16' or 'float16'")
    return value


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    token_ids: list[int]
    finished: bool
    finish_reason: str | None = None  # "stop", "length", "abort"
    num_cached_tokens: int = 0        # prompt tokens served from the prefix cache
    text: str | None = None           # decoded output when the checkpoint has a tokenizer


@dataclass
class _Tokenizer:
    """The checkpoint's tokenizer, loaded with transformers on first use (None when it has none)."""
    path: Path
    _tokenizer: Any = field(default=None, repr=False)

    @functools.cached_property
    def available(self) -> bool:  # looked up once: every output of every step asks
        return any((self.path / name).is_file() for name in TOKENIZER_FILES)

    def get(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.path))
        return self._tokenizer


class LLMEngine:
    """Add requests, call :meth:`step` until :meth:`has_unfinished_requests` is False."""

    def __init__(self, model: str | Path, **options: Any) -> None:
        self.config = config = EngineConfig(model=str(model), **options)
        # Every MINI_PLATFORM_* variable now, not at the first step that reads it.
        envs.check_all(kernel_backends=ops.BACKEND_PACKAGES)
        # The platform first: selecting it fixes up the visible-devices variables before any plugin
        # (or anything else) can start a device runtime.
        platform = platforms.current_platform
        plugins.load_general_plugins()
        platform.check_and_update_config(config)
        # The kernels that will run must serve the block size; an unknown backend name fails here, before any loading.
        backend = ops.current_backend(config.backend)
        _check_block_size(config.block_size, backend)
        device = resolve_device(config.device or platform.device_type or "cpu")
        _check_backend_runs_here(backend, device)
        _check_moe_comm(config, backend)
        model_config = ModelConfig.from_pretrained(config.model)
        limit = model_config.max_position_embeddings
        if config.max_model_len is not None and config.max_model_len > limit:
            raise ValueError(f"max_model_len={config.max_model_len} exceeds the model's max_position_embeddings={limit}")
        self.max_model_len = config.max_model_len or limit
        dtype = _torch_dtype(config.dtype)
        if config.tensor_parallel_size > 1:  # before anything is sized from the split
            sharding.check_tensor_parallel(model_config, config.tensor_parallel_size, config.enable_expert_parallel)
        num_blocks = self._num_kv_blocks(model_config, dtype)

        self.model_config = model_config
        if config.tensor_parallel_size == 1:
            self.model = load_model(config.model, dtype=dtype, device=device, max_positions=self.max_model_len)
            if backend == "npu":  # Ascend's rotary op keeps the first RoPE table of the process: refuse another one now
                from .ascend.ops.rotary import claim_cos_sin_cache
                claim_cos_sin_cache(self.model.model.rotary_emb.cos_sin_cache)
            self.runner = build_model_runner(
                self.model, num_blocks, config.block_size, config.backend, platform=platform,
                enforce_eager=config.enforce_eager, capture_sizes=config.cudagraph_capture_sizes,
                max_num_seqs=config.max_num_seqs, max_num_batched_tokens=config.max_num_batched_tokens,
                max_model_len=self.max_model_len, compilation_config=config.compilation_config)
        else:  # the model (and its decode graphs) lives in the workers; rank 0's logits come back to the CPU
            if torch.device(device).type != platform.device_type:
                raise ValueError(f"device={config.device!r} with tensor_parallel_size > 1: each worker uses its own "
                                 f"{platform.device_type} device (rank r on {platform.device_type}:r); drop device=")
            from .ascend import emulation  # the workers run under the emulation when the driver does
            self.model = None
            sizes = config.cudagraph_capture_sizes
            self.runner = MultiprocExecutor(WorkerConfig(
                config.model, config.tensor_parallel_size, dtype, num_blocks, config.block_size, config.backend,
                config.max_num_seqs, config.max_num_batched_tokens, self.max_model_len,
                config.enable_expert_parallel, config.moe_comm, enforce_eager=config.enforce_eager,
                capture_sizes=None if sizes is None else tuple(sizes), compilation_config=config.compilation_config,
                emulated_torch_npu=emulation.is_installed()))
        self.logits_device = self.model.device if self.model is not None else torch.device("cpu")
        self.kv = KVCacheManager(num_blocks, config.block_size, config.enable_prefix_caching)
        self.scheduler = Scheduler(self.kv, config.max_num_seqs, config.max_num_batched_tokens, self.max_model_len,
                                   config.enable_chunked_prefill, model_config.eos_token_ids)
        self.tokenizer = _Tokenizer(Path(config.model))
        self.requests: dict[str, Request] = {}
        self._ids = itertools.count()
        self.moe_comm_steps: dict[str, int] = {}  # moe_comm="auto": the steps of each method

    def _num_kv_blocks(self, c: ModelConfig, dtype: torch.dtype) -> int:
        """Each rank's KV cache plan (a rank caches only its KV heads; an MLA model's latent cache is whole on every
        rank): room for max_num_seqs full-length requests,
        at most DEFAULT_KV_CACHE_BYTES per rank. ``num_kv_blocks`` overrides the number of blocks, the way vLLM's
        ``num_gpu_blocks_override`` replaces the planned count (``get_num_blocks``, vllm/v1/core/kv_cache_utils.py
        at commit bbf906a8); the bytes of a block stay the plan's."""
        if c.mla is not None:  # one latent + rotary key per token and layer, the same on every rank
            self.kv_block_bytes_per_rank = (c.num_hidden_layers * self.config.block_size * dtype.itemsize
                                            * (c.mla.kv_lora_rank + c.mla.qk_rope_head_dim))
            planned = DEFAULT_KV_CACHE_BYTES // self.kv_block_bytes_per_rank
        else:
            plan = sharding.kv_cache_plan(c.num_hidden_layers, c.num_key_value_heads, c.head_dim,
                                          self.config.tensor_parallel_size, self.config.block_size,
                                          DEFAULT_KV_CACHE_BYTES, dtype.itemsize)
            self.kv_block_bytes_per_rank, planned = plan["block_bytes"], plan["num_blocks"]
        wanted = self.config.max_num_seqs * cdiv(self.max_model_len, self.config.block_size)
        return self.config.num_kv_blocks or min(wanted, planned)

    # -- requests -----------------------------------------------------------------------------------
    def tokenize(self, prompt: Prompt) -> list[int]:
        """Token ids of ``prompt`` (a string needs a tokenizer in the checkpoint directory)."""
        if isinstance(prompt, str):
            if not self.tokenizer.available:
                raise ValueError(f"prompt is a string, but {self.config.model} has no tokenizer files "
                                 f"({', '.join(TOKENIZER_FILES)}); pass a list of token ids instead")
            return list(self.tokenizer.get().encode(prompt))
        if isinstance(prompt, (bytes, bytearray)):  # a Sequence of ints, but text, not token ids
            raise ValueError(f"a prompt must be a string or a list of integer token ids, got {type(prompt).__name__} "
                             f"{prompt!r:.60}; decode it to a string first (prompt.decode())")
        if not isinstance(prompt, Sequence) or not all(_is_token_id(t) for t in prompt):
            raise ValueError(f"a prompt must be a string or a list of integer token ids, got {prompt!r:.80}")
        return [int(t) for t in prompt]

    def check_request(self, prompt_ids: list[int], params: SamplingParams) -> None:
        """Raise ValueError if this request can never run to completion in this engine."""
        vocab = self.model_config.vocab_size
        if not prompt_ids:
            raise ValueError("the prompt is empty; give at least one token")
        bad = [t for t in prompt_ids if not 0 <= t < vocab]
        if bad:
            raise ValueError(f"token id(s) {bad[:5]} are out of range for vocab_size={vocab}")
        if len(prompt_ids) > self.max_model_len:
            raise ValueError(f"the prompt has {len(prompt_ids)} tokens, more than the model's context of "
                             f"max_model_len={self.max_model_len}; shorten it")
        if not isinstance(params, SamplingParams):
            raise ValueError(f"sampling_params must be a SamplingParams, got {type(params).__name__}")
        params.validate()  # again: its fields may have been changed since it was built
        # The most tokens whose K/V the request ever holds: the last sampled token is never fed back.
        peak = min(len(prompt_ids) + params.max_tokens - 1, self.max_model_len)
        if self.kv.blocks_needed(peak) > self.kv.num_blocks:
            raise ValueError(f"the request needs up to {self.kv.blocks_needed(peak)} KV blocks of "
                             f"{self.kv.block_size} tokens ({peak} tokens), but the cache has {self.kv.num_blocks}; "
                             f"shorten the prompt, lower max_tokens or raise num_kv_blocks")
        if not self.config.enable_chunked_prefill and peak > self.config.max_num_batched_tokens:
            raise ValueError(f"without chunked prefill a request must fit in one step, but this one may need {peak} "
                             f"tokens (prompt + recomputed outputs) and max_num_batched_tokens="
                             f"{self.config.max_num_batched_tokens}; raise it or enable_chunked_prefill=True")

    def add_request(self, prompt: Prompt, sampling_params: SamplingParams | None = None,
                    request_id: str | None = None) -> str:
        """Queue a request (checked first); returns its id."""
        params = sampling_params if sampling_params is not None else SamplingParams()
        prompt_ids = self.tokenize(prompt)
        self.check_request(prompt_ids, params)
        params = dataclasses.replace(params)  # the request's own copy: later changes to the caller's do not reach it
        if request_id is None:  # the next number not in use
            request_id = next(i for i in map(str, self._ids) if i not in self.requests)
        if request_id in self.requests:
            raise ValueError(f"request id {request_id!r} is already in use")
        generator = None if params.seed is None else make_generator(params.seed, self.logits_device)
        request = Request(request_id, prompt_ids, params, generator)
        self.requests[request_id] = request
        self.scheduler.add(request)
        return request_id

    def abort(self, request_id: str) -> RequestOutput | None:
        """Stop a request now (finish reason "abort"); None if it is unknown or already finished."""
        request = self.scheduler.abort(request_id)
        if request is None:
            return None
        return self._output(self.requests.pop(request_id))

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished()

    # -- the step -------------------------------------------------------------------------------------
    def step(self) -> list[RequestOutput]:
        """Run one batch; returns an output for every request that got a new token (finished or not)."""
        return [self._output(request) for request in self._advance()]

    def _advance(self) -> list[Request]:
        """Run one batch; returns the requests that got a new token (the finished ones are forgotten here)."""
        batch = self.scheduler.schedule()
        if not batch.scheduled:
            return []
        if self.config.moe_comm == "auto" and self.model_config.moe is not None:
            self._count_moe_comm(batch)
        logits = self.runner.execute(batch, self.kv)
        sampler.check_logits(logits)
        sampling = [s.request for s in batch.scheduled if s.samples]
        params = [r.sampling_params for r in sampling]
        tokens = sampler.sample(logits, [p.temperature for p in params], [p.top_k for p in params],
                                [p.top_p for p in params], [r.generator for r in sampling])
        updated = self.scheduler.update(batch, tokens)
        for request in updated:
            if request.is_finished:
                del self.requests[request.request_id]
        return updated

    def _count_moe_comm(self, batch: SchedulerOutput) -> None:
        """Count the method this step's MoE layers use, decided as each worker decides it (ModelRunner.step_moe_comm)."""
        c, sizes = self.config, self.runner.graph_stats.capture_sizes
        method = moe_comm_for_step([s.num_new_tokens for s in batch.scheduled],
                                   [s.start + s.num_new_tokens for s in batch.scheduled],
                                   decode_graph_size(batch, sizes), tensor_parallel_size=c.tensor_parallel_size,
                                   expert_parallel=c.enable_expert_parallel and c.tensor_parallel_size > 1,
                                   max_num_seqs=c.max_num_seqs, capture_sizes=sizes)
        self.moe_comm_steps[method] = self.moe_comm_steps.get(method, 0) + 1

    def close(self) -> None:
        """Stop the worker processes of a tensor-parallel engine (nothing to do in one process)."""
        if isinstance(self.runner, MultiprocExecutor):
            self.runner.close()

    def stats(self) -> dict[str, Any]:
        g = self.runner.graph_stats
        return {"num_preemptions": self.scheduler.num_preemptions,
                "num_prefix_hit_tokens": self.scheduler.num_prefix_hit_tokens,
                "num_free_blocks": self.kv.num_free_blocks, "num_blocks": self.kv.num_blocks,
                "kv_cache_bytes_per_rank": self.kv.num_blocks * self.kv_block_bytes_per_rank,
                "cudagraph_capture_sizes": g.capture_sizes, "graph_capture_seconds": g.capture_seconds,
                "num_graph_steps": g.num_graph_steps, "num_eager_steps": g.num_eager_steps,
                "num_padded_tokens": g.num_padded_tokens, "moe_comm_steps": dict(self.moe_comm_steps),
                **_mode_stats(g)}

    def _output(self, request: Request) -> RequestOutput:
        text = None
        if self.tokenizer.available:
            text = self.tokenizer.get().decode(request.output_token_ids, skip_special_tokens=True)
        return RequestOutput(request.request_id, request.prompt_token_ids, list(request.output_token_ids),
                             request.is_finished, request.finish_reason, request.num_cached_tokens, text)


def _mode_stats(g: Any) -> dict[str, Any]:
    """The graph modes' part of stats(): the mode run, the split, graphs captured and steps run per runtime mode (under
    tensor parallelism, what the workers captured, the same on every rank, and the steps the driver sent them)."""
    graphs = bool(g.capture_sizes or g.piecewise_capture_sizes)
    return {"cudagraph_mode": g.cudagraph_mode if graphs else "NONE", "piecewise_capture_sizes": g.piecewise_capture_sizes,
            "num_pieces": g.num_pieces, "splitting_ops": g.splitting_ops, "graphs_captured": dict(g.graphs_captured),
            "steps_by_mode": dict(g.steps_by_mode)}


class LLM:
    """Offline batch generation: ``LLM(model=DIR).generate(prompts, SamplingParams(...))``.

    Options (all keyword): block_size=16, num_kv_blocks=None (room for max_num_seqs full-length
    requests, at most 1 GiB of address space; on a CPU only the pages requests write take memory),
    max_num_seqs=64, max_num_batched_tokens=2048, max_model_len=None, enable_prefix_caching=True,
    enable_chunked_prefill=True, dtype="float32", backend=None, device=None,
    enforce_eager=None (eager on the CPU platform, decode graphs where the platform has a graph wrapper),
    cudagraph_capture_sizes=None ([1, 2, 4] + range(8, N + 1, 8), N = min(2 * max_num_seqs, 512); a decode
    graph is captured for the sizes up to max_num_seqs),
    compilation_config=None ({"cudagraph_mode": "PIECEWISE"}, or vLLM's other names NONE, FULL, FULL_DECODE_ONLY,
    FULL_AND_PIECEWISE; see mini_platform.compilation.config),
    tensor_parallel_size=1, enable_expert_parallel=False, moe_comm="alltoall" ("allgather"; on backend="npu" also
    "mc2" and "auto", chosen per step as vllm-ascend v0.11.0 does and counted in ``stats()["moe_comm_steps"]``). With
    ``tensor_parallel_size > 1`` the model runs in that many worker processes: ``close()`` them, or use
    ``with LLM(...) as llm:``.
    """

    def __init__(self, model: str | Path, **options: Any) -> None:
        self.engine = LLMEngine(model, **options)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def generate(self, prompts: Prompt | Sequence[Prompt],
                 sampling_params: SamplingParams | Sequence[SamplingParams] | None = None) -> list[RequestOutput]:
        """One finished output per prompt, in the order given. A single string or a single list of
        token ids counts as one prompt. Every prompt is checked before any is run."""
        if isinstance(prompts, str) or (isinstance(prompts, Sequence) and prompts
                                        and not any(isinstance(p, (str, Sequence)) for p in prompts)):
            prompts = [prompts]  # one prompt of token ids (checked, with the others, by tokenize)
        prompts = list(prompts)
        if sampling_params is None or isinstance(sampling_params, SamplingParams):
            params = [sampling_params or SamplingParams()] * len(prompts)
        elif isinstance(sampling_params, (Mapping, str, bytes)) or not isinstance(sampling_params, Iterable):
            raise ValueError(f"sampling_params must be a SamplingParams or a list of them (one per prompt), got "
                             f"{type(sampling_params).__name__} {sampling_params!r:.80}"
                             + ("; build one with SamplingParams(**your_dict)" if isinstance(sampling_params, Mapping)
                                else ""))
        else:
            params = list(sampling_params)
            if len(params) != len(prompts):
                raise ValueError(f"got {len(params)} sampling_params for {len(prompts)} prompts; "
                                 "give one per prompt or a single one for all")
        engine = self.engine
        prompt_ids = [engine.tokenize(p) for p in prompts]
        for ids, p in zip(prompt_ids, params):
            engine.check_request(ids, p)
        request_ids: list[str] = []
        finished: dict[str, RequestOutput] = {}
        try:
            for ids, p in zip(prompt_ids, params):
                request_ids.append(engine.add_request(ids, p))
            while engine.has_unfinished_requests():
                for request in engine._advance():  # outputs only for the finished: nothing streams here
                    if request.is_finished:
                        finished[request.request_id] = engine._output(request)
        except BaseException:  # an error or Ctrl+C: drop this call's requests so the engine stays usable
            for rid in request_ids:
                engine.abort(rid)
            raise
        return [finished[rid] for rid in request_ids]
