// The Lumen runtime's C++ part: Lumen memory is host memory, handed out under the PrivateUse1 device.
//
// What torch cannot do from Python for a new device lives here, and nothing else:
//   - an allocator for PrivateUse1 (REGISTER_ALLOCATOR), a device guard (which Lumen is current) and the
//     PrivateUse1 hooks (torch asks them whether the accelerator is there, e.g. torch.distributed's barrier);
//   - the kernels that make and reinterpret Lumen tensors: empty.memory_format, empty_strided, as_strided,
//     view, _reshape_alias, resize_, and the copies between cpu and lumen (_copy_from, _copy_from_and_resize);
//     fill_ as the one compute kernel written here;
//   - lumen::cpu_view, a CPU tensor over the same bytes, so that every other op can run on the CPU
//     (the torch.library fallback in lumen_npu/fallback.py) and gloo can work on Lumen memory.
// The device state is plain C (lumen_set_device, ...), reached from Python with ctypes.
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <atomic>
#include <cstring>

namespace lumen {

static c10::DeviceIndex device_count = 1;
static thread_local c10::DeviceIndex current = 0;
static std::atomic<int64_t> live_bytes{0};

struct Block {  // what a DataPtr's context remembers, to count the bytes back when it is freed
  void* ptr;
  size_t nbytes;
};

static void release(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  live_bytes -= static_cast<int64_t>(block->nbytes);
  c10::free_cpu(block->ptr);
  delete block;
}

struct LumenAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    live_bytes += static_cast<int64_t>(nbytes);
    return {ptr, new Block{ptr, nbytes}, &release, c10::Device(c10::DeviceType::PrivateUse1, current)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dst, const void* src, size_t n) const override { std::memcpy(dst, src, n); }
};

static LumenAllocator allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

struct LumenGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device getDevice() const override { return {c10::DeviceType::PrivateUse1, current}; }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.index() >= 0 && d.index() < device_count, "Lumen device ", int(d.index()),
                " is not visible; this process sees ", int(device_count), " device(s)");
    current = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override { current = d.index(); }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    if (d.index() != current) setDevice(d);
    return old;
  }
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const override { return getStream(s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return device_count; }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, LumenGuard);

struct LumenHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count > 0; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::Device getDeviceFromPtr(void*) const override { return {c10::DeviceType::PrivateUse1, current}; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), nbytes);
  }
};
static const bool hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new LumenHooks());
  return true;
}();

static const c10::DispatchKeySet lumen_keys(c10::DispatchKey::PrivateUse1);

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_generic(size, &allocator, lumen_keys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(size, stride, &allocator, lumen_keys, c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::cpu::as_strided(self, size, stride, storage_offset);  // a view: same storage, new geometry
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  at::native::maybe_resize_storage_cpu(  // grows through the storage's allocator: ours
      impl, at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(), impl->storage_offset()));
  if (memory_format) impl->empty_tensor_restride(*memory_format);
  return self;
}

// The same bytes as a CPU tensor (same sizes, strides and offset); it keeps the Lumen storage alive.
at::Tensor cpu_view(const at::Tensor& self) {
  if (self.device().is_cpu()) return self;
  TORCH_CHECK(self.device().is_privateuseone(), "cpu_view: a lumen tensor expected, got ", self.device());
  c10::Storage storage = self.storage();
  return at::for_blob(storage.mutable_data(), self.sizes())
      .strides(self.strides())
      .storage_offset(self.storage_offset())
      .deleter([storage](void*) {})
      .options(self.options().device(c10::kCPU))
      .make_tensor();
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  cpu_view(dst).copy_(cpu_view(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Tensor& fill_(at::Tensor& self, const at::Scalar& value) {
  cpu_view(self).fill_(value);
  return self;
}

TORCH_LIBRARY(lumen, m) {
  m.def("cpu_view(Tensor self) -> Tensor");
}

TORCH_LIBRARY_IMPL(lumen, PrivateUse1, m) {
  m.impl("cpu_view", &cpu_view);
}

TORCH_LIBRARY_IMPL(lumen, CPU, m) {
  m.impl("cpu_view", &cpu_view);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &empty_memory_format);
  m.impl("empty_strided", &empty_strided);
  m.impl("as_strided", &as_strided);
  m.impl("view", &at::native::view);
  m.impl("_reshape_alias", &at::native::_reshape_alias);
  m.impl("resize_", &resize_);
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
  m.impl("fill_.Scalar", &fill_);
}

}  // namespace lumen

extern "C" {
void lumen_set_device_count(int n) { lumen::device_count = static_cast<c10::DeviceIndex>(n); }
int lumen_current_device() { return lumen::current; }
void lumen_set_device(int index) { lumen::current = static_cast<c10::DeviceIndex>(index); }
long long lumen_memory_allocated() { return lumen::live_bytes.load(); }
}
