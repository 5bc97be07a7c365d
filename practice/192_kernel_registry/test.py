"""Tests of exercise 192: registering kernels per backend, choosing a backend, failing loudly."""
import random

import pytest

from submission import KernelRegistry, KernelUnavailableError


def check_message(error, kernel, backend, having):
    """The statement gives "a message like": test only that it names the kernel, the backend and,
    in alphabetical order, the backends that have the kernel."""
    message = str(error)
    assert kernel in message and backend in message, message
    positions = [message.rfind(name) for name in having]
    assert -1 not in positions and positions == sorted(positions), message
    assert (error.kernel, error.backend) == (kernel, backend)


def make():
    ops = KernelRegistry(["cpu", "triton", "npu"], default="cpu")

    @ops.register("rms_norm", "cpu")
    def rms_norm_cpu(x):
        return "cpu"

    @ops.register("rms_norm", "triton")
    def rms_norm_triton(x):
        return "triton"

    return ops


def test_example():
    ops = make()
    assert ops.call("rms_norm", 1.0) == "cpu"
    with ops.use_backend("triton"):
        assert ops.call("rms_norm", 1.0) == "triton"
        assert ops.call("rms_norm", 1.0, backend="cpu") == "cpu"
    with pytest.raises(KernelUnavailableError) as info:
        ops.get("rms_norm", "npu")
    check_message(info.value, "rms_norm", "npu", ["cpu", "triton"])
    with pytest.raises(ValueError):
        ops.get("rms_nrom")


def test_register_returns_the_function_and_rejects_bad_registrations():
    ops = KernelRegistry(["cpu", "npu"], default="npu")

    def impl(a, b=0):
        return a + b

    assert ops.register("add", "cpu")(impl) is impl
    # register(...) may raise at once or when its decorator is applied: the test applies it
    with pytest.raises(ValueError):
        ops.register("add", "cpu")(lambda a, b=0: "second")
    with pytest.raises(ValueError):
        ops.register("add", "rocm")(lambda a, b=0: "rocm")
    assert ops.call("add", 2, b=3, backend="cpu") == 5
    with pytest.raises(KernelUnavailableError) as info:
        ops.call("add", 2)  # default is npu: no silent fallback to cpu
    assert (info.value.kernel, info.value.backend) == ("add", "npu")
    assert isinstance(info.value, NotImplementedError)


def test_unknown_names_are_value_errors():
    with pytest.raises(ValueError):
        KernelRegistry(["cpu"], default="gpu")
    ops = make()
    with pytest.raises(ValueError):
        ops.current_backend("tpu")
    entered = []
    with pytest.raises(ValueError):
        with ops.use_backend("tpu"):
            entered.append(True)
    assert entered == [] and ops.current_backend() == "cpu"
    with pytest.raises(ValueError):
        ops.call("rms_norm", 1.0, backend="tpu")


def test_use_backend_nests_and_restores_on_exceptions():
    ops = make()
    with ops.use_backend("npu"):
        with ops.use_backend("triton"):
            assert ops.current_backend() == "triton"
        assert ops.current_backend() == "npu"
        with pytest.raises(RuntimeError):
            with ops.use_backend("cpu"):
                raise RuntimeError("kernel crashed")
        assert ops.current_backend() == "npu"
        assert ops.current_backend("cpu") == "cpu"
    assert ops.current_backend() == "cpu"


def test_registries_are_independent():
    a, b = make(), KernelRegistry(["cpu", "triton", "npu"], default="triton")
    with a.use_backend("npu"):
        assert b.current_backend() == "triton"
    with pytest.raises(ValueError):
        b.get("rms_norm")


@pytest.mark.parametrize("seed", range(20))
def test_random_tables(seed):
    rng = random.Random(seed)
    backends = ["cpu", "triton", "npu", "xpu"][: rng.randint(2, 4)]
    default = rng.choice(backends)
    ops = KernelRegistry(backends, default=default)
    repro = [f"ops = KernelRegistry({backends!r}, default={default!r})"]   # the calls so far, shown on failure
    table = {}
    for kernel in ("rms_norm", "rope", "silu_and_mul", "attention"):
        for backend in rng.sample(backends, rng.randint(1, len(backends))):
            ops.register(kernel, backend)(lambda *a, _k=kernel, _b=backend: (_k, _b, a))
            repro.append(f"ops.register({kernel!r}, {backend!r})(lambda *a: ({kernel!r}, {backend!r}, a))")
            table.setdefault(kernel, set()).add(backend)
    for kernel, having in table.items():
        for backend in backends:
            if backend in having:
                assert ops.call(kernel, 7, backend=backend) == (kernel, backend, (7,))
            else:
                with pytest.raises(KernelUnavailableError) as info:
                    with ops.use_backend(backend):
                        ops.get(kernel)
                check_message(info.value, kernel, backend, sorted(having))
