// The kernels a backend must own (allocation, views, copies, resize), the boxed fallback that runs every other
// operator with the CPU kernel on aliases of device memory (zero copy), and direct kernels that do the same for the
// hottest operators without boxing their arguments.
#include "neuron.h"

#include <ATen/CPUFunctions.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Operators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/contiguous_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

namespace hf_neuron {
namespace {

constexpr auto kNeuronKey = c10::DispatchKey::PrivateUse1;

bool on_device(const at::Tensor& t) {
  return t.defined() && t.device().type() == kNeuron;
}

void check_dense(std::optional<c10::Layout> layout) {
  TORCH_CHECK(
      !layout.has_value() || *layout == c10::kStrided,
      "The neuron device supports dense strided tensors only (got layout ", *layout, ")");
}

// TorchNeuron refuses a memory format other than contiguous and preserve where a user asks for one: `contiguous`
// and `_to_copy` (`.to(memory_format=...)`) of a device tensor. Its allocation does not refuse one (below).
void check_memory_format(std::optional<c10::MemoryFormat> format) {
  if (settings().strict_memory_formats && format.has_value()) {
    TORCH_CHECK(
        *format == c10::MemoryFormat::Contiguous || *format == c10::MemoryFormat::Preserve,
        "Neuron tensors only support contiguous or preserve memory format");
  }
}

// The layout TorchNeuron's allocation (`empty.memory_format`, `resize_`) gives a request: channels-last for a 4-D and
// channels-last-3d for a 5-D shape, contiguous for everything else (preserve included). ATen's composites ask for
// channels-last themselves where an input's strides suggest it (a structured operator's output, empty_like), so the
// real device allocates it; the CPU's rules (which refuse a channels-last request of another rank) apply otherwise.
std::optional<c10::MemoryFormat> allocation_format(c10::IntArrayRef size, std::optional<c10::MemoryFormat> format) {
  if (!settings().strict_memory_formats) {
    return format;
  }
  const auto requested = format.value_or(c10::MemoryFormat::Contiguous);
  if ((requested == c10::MemoryFormat::ChannelsLast && size.size() == 4) ||
      (requested == c10::MemoryFormat::ChannelsLast3d && size.size() == 5)) {
    return requested;
  }
  return c10::MemoryFormat::Contiguous;
}

// A tensor with the metadata of `like` (sizes, strides, offset, conj/neg bits) over `storage`, for the backend
// of `key`.
at::Tensor tensor_over(c10::Storage storage, const at::Tensor& like, c10::DispatchKey key) {
  auto out = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(key), like.dtype());
  auto* impl = out.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  impl->_set_conj(like.is_conj());
  impl->_set_neg(like.is_neg());
  return out;
}

// The TensorImpl of a CPU kernel's view of a device tensor: the device tensor's sizes, strides and offset over a CPU
// storage, with the contiguity the device tensor has computed copied rather than computed again (the same sizes and
// strides have the same contiguity). Lives for one call of a CPU kernel; a direct kernel's read-only calls reuse
// them (`CpuViewPool`).
class CpuViewImpl final : public c10::TensorImpl {
 public:
  CpuViewImpl(c10::Storage storage, const c10::TensorImpl& like)
      : c10::TensorImpl(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), like.dtype()) {
    copy_metadata(like);
  }

  // Makes this a view of `like` over `storage` again.
  void reuse(c10::Storage storage, const c10::TensorImpl& like) {
    storage_ = std::move(storage);
    data_type_ = like.dtype();
    copy_metadata(like);
  }

  // Lets go of the memory it viewed (a view in the pool keeps none alive).
  void release_storage() {
    storage_ = c10::Storage();
  }

 private:
  void copy_metadata(const c10::TensorImpl& like) {
    sizes_and_strides_.set_sizes(like.sizes());
    sizes_and_strides_.set_strides(like.strides());
    storage_offset_ = like.storage_offset();
    numel_ = like.numel();
    is_contiguous_ = like.is_contiguous();
    is_channels_last_contiguous_ = like.is_contiguous(c10::MemoryFormat::ChannelsLast);
    is_channels_last_3d_contiguous_ = like.is_contiguous(c10::MemoryFormat::ChannelsLast3d);
    is_channels_last_ = like.is_strides_like_channels_last();
    is_channels_last_3d_ = like.is_strides_like_channels_last_3d();
    is_non_overlapping_and_dense_ = like.is_non_overlapping_and_dense();
    _set_conj(like.is_conj());
    _set_neg(like.is_neg());
  }
};

// A CPU tensor with the metadata of device tensor `like` over `storage`.
at::Tensor cpu_tensor_over(c10::Storage storage, const at::Tensor& like) {
  return at::detail::make_tensor<CpuViewImpl>(std::move(storage), *like.unsafeGetTensorImpl());
}

// The CPU views a direct kernel's read-only call lends its CPU kernel, taken from and given back to this thread's
// pool: a view that only the call holds when it ends (the kernel kept no reference) lets go of its memory and goes
// back to the pool, so that the next call allocates no TensorImpl.
class CpuViewPool {
 public:
  CpuViewPool() = default;
  CpuViewPool(const CpuViewPool&) = delete;
  CpuViewPool& operator=(const CpuViewPool&) = delete;

  at::Tensor lend(c10::Storage storage, const at::Tensor& like) {
    auto& pool = free_views();
    c10::intrusive_ptr<CpuViewImpl> view;
    if (pool.empty()) {
      view = c10::make_intrusive<CpuViewImpl>(std::move(storage), *like.unsafeGetTensorImpl());
    } else {
      view = std::move(pool.back());
      pool.pop_back();
      view->reuse(std::move(storage), *like.unsafeGetTensorImpl());
    }
    lent_.push_back(view);
    return at::Tensor(std::move(view));
  }

  ~CpuViewPool() {
    auto& pool = free_views();
    for (auto& view : lent_) {
      if (view.use_count() == 1 && view.weak_use_count() == 1 && pool.size() < kCapacity) {
        view->release_storage();
        pool.push_back(std::move(view));
      }
    }
  }

 private:
  static constexpr size_t kCapacity = 16;
  static std::vector<c10::intrusive_ptr<CpuViewImpl>>& free_views() {
    HF_NEURON_THREAD_LOCAL std::vector<c10::intrusive_ptr<CpuViewImpl>> views;
    return views;
  }
  c10::SmallVector<c10::intrusive_ptr<CpuViewImpl>, 4> lent_;
};

// The dispatch keys of a CPU kernel's new result (a dense CPU tensor's).
c10::DispatchKeySet cpu_result_keys() {
  static const c10::DispatchKeySet keys = at::detail::empty_cpu({0}, c10::kFloat).key_set();
  return keys;
}

// A device tensor of `index` over the memory of `cpu`, a CPU kernel's result (the device adopts it, no copy). A
// result that nothing else holds — a kernel's new output — becomes the device tensor itself: its TensorImpl takes the
// device storage and the device's dispatch keys and keeps its sizes, strides and contiguity; any other is wrapped.
// The keys change through `TensorImpl::_change_backend_component_keys`, which torch marks private: the direct-kernel
// test holds the keys of every direct result to those of the fallback's.
at::Tensor adopt_result(at::Tensor cpu, c10::DeviceIndex index) {
  c10::Storage device = adopt_cpu_storage(cpu.storage(), index);
  auto* impl = cpu.unsafeGetTensorImpl();
  if (cpu.use_count() == 1 && cpu.weak_use_count() == 1 && impl->key_set() == cpu_result_keys() &&
      impl->autograd_meta() == nullptr && !impl->is_wrapped_number() && impl->allow_tensor_metadata_change()) {
    impl->set_storage_keep_dtype(std::move(device));
    impl->_change_backend_component_keys(c10::Device(kNeuron, index));
    return cpu;
  }
  return tensor_over(std::move(device), cpu, kNeuronKey);
}

// A CPU storage over the memory of a device storage, keeping the device storage alive (its reference, held by the
// CPU storage's data pointer).
void release_storage_ref(void* context) {
  c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(context));
}

c10::Storage cpu_alias_storage(const c10::Storage& device_storage) {
  void* data = const_cast<void*>(device_storage.data());
  c10::StorageImpl* owner = device_storage.unsafeGetStorageImpl();
  c10::raw::intrusive_ptr::incref(owner);
  c10::DataPtr data_ptr(data, owner, &release_storage_ref, c10::Device(c10::kCPU));
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), device_storage.nbytes(), std::move(data_ptr), c10::GetCPUAllocator(),
      /*resizable=*/true));
}

c10::Storage cpu_copy_storage(const c10::Storage& device_storage) {
  const size_t nbytes = device_storage.nbytes();
  c10::Storage copy(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), nbytes, c10::GetCPUAllocator(), /*resizable=*/true));
  if (nbytes > 0) {
    std::memcpy(copy.mutable_data(), device_storage.data(), nbytes);
  }
  return copy;
}

c10::Storage cpu_view_storage(const c10::Storage& device_storage) {
  return settings().copy_aliasing ? cpu_copy_storage(device_storage) : cpu_alias_storage(device_storage);
}

// The CPU tensor a CPU kernel reads for device tensor `t`. Efficient zero tensors (e.g. sign's gradient) have
// no memory: the kernel gets real zeros.
at::Tensor cpu_view(const at::Tensor& t, c10::Storage storage) {
  if (t._is_zerotensor()) {
    return at::zeros(t.sizes(), t.options().device(c10::kCPU));
  }
  return cpu_tensor_over(std::move(storage), t);
}

at::Tensor cpu_view(const at::Tensor& t) {
  return cpu_view(t, cpu_view_storage(t.storage()));
}

// ---- native kernels ------------------------------------------------------------------------------
at::Tensor empty_memory_format(
    c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
    std::optional<c10::Device> device, std::optional<bool> /*pin_memory*/,
    std::optional<c10::MemoryFormat> memory_format) {
  check_dense(layout);
  const auto index = check_index(device.has_value() ? device->index() : -1);
  c10::DeviceGuard guard(c10::Device(kNeuron, index));
  return at::detail::empty_generic(
      size, device_allocator(), c10::DispatchKeySet(kNeuronKey), c10::dtype_or_default(dtype),
      allocation_format(size, memory_format));
}

at::Tensor empty_strided(
    c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout, std::optional<c10::Device> device, std::optional<bool> /*pin_memory*/) {
  check_dense(layout);
  const auto index = check_index(device.has_value() ? device->index() : -1);
  c10::DeviceGuard guard(c10::Device(kNeuron, index));
  return at::detail::empty_strided_generic(
      size, stride, device_allocator(), c10::DispatchKeySet(kNeuronKey), c10::dtype_or_default(dtype));
}

at::Tensor as_strided(
    const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<int64_t> offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

// Grows the storage of `self` when its metadata reaches past the end (as CPU resize does).
void ensure_storage(const at::Tensor& self) {
  auto* impl = self.unsafeGetTensorImpl();
  if (impl->numel() == 0) {
    return;
  }
  const size_t needed =
      at::detail::computeStorageNbytes(impl->sizes(), impl->strides(), self.itemsize(), impl->storage_offset());
  if (needed > impl->storage().nbytes()) {
    reallocate_storage(impl->storage().unsafeGetStorageImpl(), needed);
  }
}

const at::Tensor& resize_(
    const at::Tensor& self, c10::IntArrayRef size, std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  const auto format = allocation_format(size, memory_format).value_or(c10::MemoryFormat::Contiguous);
  if (format != c10::MemoryFormat::Preserve && format != c10::MemoryFormat::Contiguous) {
    impl->empty_tensor_restride(format);
  }
  ensure_storage(self);
  return self;
}

at::Tensor& set_storage(
    at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size, c10::IntArrayRef stride) {
  auto* impl = self.unsafeGetTensorImpl();
  if (!impl->storage().is_alias_of(source)) {
    impl->set_storage_keep_dtype(std::move(source));
  }
  const c10::DimVector contiguous = c10::contiguous_strides(size);
  impl->set_sizes_and_strides(size, stride.empty() ? c10::IntArrayRef(contiguous) : stride, offset);
  ensure_storage(self);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.itemsize());
  return set_storage(self, std::move(source), 0, {numel}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) {
    return self;
  }
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true));
  return set_storage(self, std::move(storage), 0, {0}, {});
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.layout() == c10::kStrided, "The neuron device copies dense strided tensors only");
  const at::Tensor src_cpu = on_device(self) ? cpu_view(self) : self;
  at::Tensor dst_cpu = on_device(dst) ? cpu_view(dst) : dst;
  dst_cpu.copy_(src_cpu);
  if (settings().copy_aliasing && on_device(dst) && dst.storage().nbytes() > 0) {
    std::memcpy(const_cast<void*>(dst.storage().data()), dst_cpu.storage().data(), dst.storage().nbytes());
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  return cpu_view(self).item();
}

// `contiguous` and `_to_copy` of a device tensor: TorchNeuron's own kernels, which refuse another memory format, then
// what ATen's kernels do.
at::Tensor contiguous(const at::Tensor& self, c10::MemoryFormat memory_format) {
  check_memory_format(memory_format);
  return at::native::contiguous(self, memory_format);
}

at::Tensor to_copy(
    const at::Tensor& self, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
    std::optional<c10::Device> device, std::optional<bool> pin_memory, bool non_blocking,
    std::optional<c10::MemoryFormat> memory_format) {
  check_memory_format(memory_format);
  return at::native::_to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format);
}

void record_stream(at::Tensor& /*self*/, c10::Stream /*stream*/) {
  // Work on the device is synchronous: memory is never in use by another stream when freed.
}

// Dropout as CUDA runs it, so that its mask draws from the device's generator. The CPU kernel would draw from
// the CPU's default generator internally, where torch.neuron.manual_seed and get_rng_state cannot reach it.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  DeviceKernelScope scope("aten::native_dropout");  // native on Trainium too: what it dispatches is not logged
  if (input.numel() == 0 || (train.has_value() && !*train)) {
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  }
  const double keep = 1.0 - p;
  const at::Tensor mask = at::empty_like(input, input.options().dtype(c10::kBool)).bernoulli_(keep);
  return {input.mul(mask).mul_(keep == 0.0 ? 0.0 : 1.0 / keep), mask};
}

// An allocator of no memory, for efficient zero tensors (as the CPU's `_efficientzerotensor` does).
struct NoMemoryAllocator final : c10::Allocator {
  explicit NoMemoryAllocator(c10::Device device) : device(device) {}
  c10::DataPtr allocate(size_t /*nbytes*/) override {
    return {nullptr, nullptr, nullptr, device};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return nullptr;
  }
  void copy_data(void* /*dest*/, const void* /*src*/, std::size_t /*count*/) const override {}
  c10::Device device;
};

at::Tensor efficient_zero_tensor(
    c10::IntArrayRef size, std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
    std::optional<c10::Device> device, std::optional<bool> /*pin_memory*/) {
  check_dense(layout);
  // TorchNeuron registers no kernel of its own for it: on Trainium it runs through the CPU fallback.
  record_named("aten::_efficientzerotensor");
  NoMemoryAllocator allocator(c10::Device(kNeuron, check_index(device.has_value() ? device->index() : -1)));
  const auto keys = c10::DispatchKeySet(kNeuronKey) | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &allocator, keys, c10::dtype_or_default(dtype), std::nullopt);
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  // Lets `Module.to("neuron")` swap parameter data in place, so tied weights stay tied.
  auto dense = [](const at::Tensor& t) {
    return t.layout() == c10::kStrided && (t.device().type() == kNeuron || t.device().type() == c10::kCPU);
  };
  return dense(self) && dense(from);
}

HF_NEURON_THREAD_LOCAL bool in_compiled_graph = false;

// The types Trainium computes in 32 bits.
bool is_64bit(c10::ScalarType dtype) {
  return dtype == c10::kDouble || dtype == c10::kLong;
}

// A 64-bit value rounded through its 32-bit type, as Trainium computes it.
double rounded_to_32bits(double value) {
  return static_cast<double>(static_cast<float>(value));
}

int64_t rounded_to_32bits(int64_t value) {
  return static_cast<int64_t>(static_cast<int32_t>(value));
}

// Whether rounding `value` through 32 bits changes nothing (a NaN stays a NaN).
template <typename T>
bool exact_in_32bits(T value) {
  return rounded_to_32bits(value) == value || value != value;
}

// Whether rounding dense tensor `t` through its 32-bit type changes nothing: its memory, read in place (a
// non-overlapping and dense tensor's values fill the `numel` elements from its data pointer, in some order). Most
// 64-bit tensors of a model (positions, indices, lengths) are, and the round trip's two conversions are then work
// that changes no value.
template <typename T>
bool dense_and_exact_in_32bits(const at::Tensor& t) {
  if (t.is_neg() || t._is_zerotensor() || !t.is_non_overlapping_and_dense()) {
    return false;
  }
  const T* data = t.const_data_ptr<T>();
  return std::all_of(data, data + t.numel(), [](T value) { return exact_in_32bits(value); });
}

// Trainium computes 64-bit types in 32 bits: `t` rounded through its 32-bit type (itself when it is not 64-bit, or
// when no value changes). A Python number stays one (`is_wrapped_number`): type promotion treats it as weaker than
// any tensor, so an int64 tensor + 0.5 is float32, not float64. A zero-dim CPU tensor (a Python number, mostly) is
// rounded by value, without dispatching the two conversions.
// Whether rounding 64-bit tensor `t` through its 32-bit type changes nothing (`dense_and_exact_in_32bits`).
bool unchanged_by_narrowing(const at::Tensor& t) {
  return t.scalar_type() == c10::kDouble ? dense_and_exact_in_32bits<double>(t)
                                         : dense_and_exact_in_32bits<int64_t>(t);
}

// Writes zero-dim 64-bit CPU tensor `number` rounded through its 32-bit type into `into` (zero-dim, of its dtype),
// which is a Python number when `number` is.
void write_rounded_number(const at::Tensor& number, at::Tensor& into) {
  if (number.scalar_type() == c10::kDouble) {
    *into.mutable_data_ptr<double>() = rounded_to_32bits(*number.const_data_ptr<double>());
  } else {
    *into.mutable_data_ptr<int64_t>() = rounded_to_32bits(*number.const_data_ptr<int64_t>());
  }
  into.unsafeGetTensorImpl()->set_wrapped_number(number.unsafeGetTensorImpl()->is_wrapped_number());
}

at::Tensor narrowed(const at::Tensor& t) {
  if (!t.defined() || !is_64bit(t.scalar_type()) || unchanged_by_narrowing(t)) {
    return t;
  }
  if (t.dim() == 0 && t.device().is_cpu() && !t.is_neg() && !t._is_zerotensor()) {
    at::Tensor result = at::detail::empty_cpu({}, t.scalar_type(), /*pin_memory=*/false, std::nullopt);
    write_rounded_number(t, result);
    return result;
  }
  at::Tensor result = t.to(t.scalar_type() == c10::kDouble ? c10::kFloat : c10::kInt).to(t.scalar_type());
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
    result.unsafeGetTensorImpl()->set_wrapped_number(true);
  }
  return result;
}

// Whether `strides` are the contiguous strides of `sizes` (`c10::contiguous_strides`), size-1 dimensions included.
bool has_contiguous_strides(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (strides[i] != expected) {
      return false;
    }
    expected *= std::max<int64_t>(sizes[i], 1);
  }
  return true;
}

// A zero-dim CPU tensor (a Python number, mostly) as `narrowed` gives it, rounded into a tensor this thread reuses
// when nothing holds it any more: for a direct kernel, which only reads its CPU inputs and returns new tensors.
at::Tensor narrowed_number(const at::Tensor& t) {
  if (!is_64bit(t.scalar_type()) || t.is_neg() || t._is_zerotensor()) {
    return narrowed(t);
  }
  if (unchanged_by_narrowing(t)) {
    return t;
  }
  HF_NEURON_THREAD_LOCAL std::array<at::Tensor, 2> reusable;  // float64, int64
  at::Tensor& rounded = reusable[t.scalar_type() == c10::kDouble ? 0 : 1];
  if (!rounded.defined() || rounded.use_count() != 1) {
    rounded = at::detail::empty_cpu({}, t.scalar_type(), /*pin_memory=*/false, std::nullopt);
  }
  write_rounded_number(t, rounded);
  return rounded;
}

// Copies the elements of `from` (any strides) in order into `into`, contiguous and of its sizes and dtype, `Element`
// by `Element` (a type of the dtype's size).
template <typename Element>
void gather(const at::Tensor& from, at::Tensor& into) {
  const c10::IntArrayRef sizes = from.sizes();
  const c10::IntArrayRef strides = from.strides();
  const auto* source = static_cast<const Element*>(from.const_data_ptr());
  auto* out = static_cast<Element*>(into.mutable_data_ptr());
  const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
  const int64_t inner = sizes[last];
  const int64_t inner_stride = strides[last];
  c10::SmallVector<int64_t, 6> index(sizes.size(), 0);
  int64_t offset = 0;
  for (int64_t row = from.numel() / inner; row > 0; --row) {
    if (inner_stride == 1) {
      std::memcpy(out, source + offset, inner * sizeof(Element));
      out += inner;
    } else {
      for (int64_t i = 0; i < inner; ++i) {
        *out++ = source[offset + i * inner_stride];
      }
    }
    for (int64_t d = last - 1; d >= 0; --d) {  // the next row: an odometer over the outer dimensions
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
}

// What `copy_` does for a small tensor with neither conjugate nor negative bit, without building a TensorIterator
// (whose set-up costs more than copying a few thousand elements); false, copying nothing, for any other.
bool gather_small(const at::Tensor& from, at::Tensor& into) {
  constexpr int64_t kSmall = 1 << 14;
  if (from.dim() == 0 || from.numel() == 0 || from.numel() > kSmall || from.is_conj() || from.is_neg()) {
    return false;
  }
  switch (from.itemsize()) {
    case 1: gather<uint8_t>(from, into); return true;
    case 2: gather<uint16_t>(from, into); return true;
    case 4: gather<uint32_t>(from, into); return true;
    case 8: gather<uint64_t>(from, into); return true;
    default: return false;
  }
}

// The layout the real backend gives a kernel's new (not a view's) result, on its dispatch routes: a native kernel's
// result is allocated from its shape and dtype, with contiguous strides, whatever the layout the CPU kernel chose (a
// channels-last convolution, an add that follows a transposed input), down to the strides of size-1 dimensions,
// which ATen reads to suggest a memory format (a (N, C, 1, 1) result with channels-last strides is contiguous, yet
// suggests channels-last to what views it). Not in a compiled graph: the Neuron compiler lays out a graph's values
// itself, and a graph run operator by operator relies on the strides it was traced with (a `.contiguous()` the trace
// found a no-op is gone from it). `is_native()` tells whether the operator is native on Trainium (asked only when the
// strides differ).
template <typename IsNative>
at::Tensor backend_layout(at::Tensor result, const IsNative& is_native) {
  if (!settings().trainium_dispatch || in_compiled_graph) {
    return result;
  }
  if (has_contiguous_strides(result.sizes(), result.strides()) || !is_native()) {
    return result;
  }
  const c10::DimVector strides = c10::contiguous_strides(result.sizes());
  if (result.is_contiguous()) {
    return result.as_strided(result.sizes(), strides, result.storage_offset());
  }
  // The copy `contiguous()` would make, without its five dispatches (contiguous, clone, empty_like, empty, copy_).
  at::Tensor contiguous = at::detail::empty_cpu(result.sizes(), result.scalar_type());
  if (!gather_small(result, contiguous)) {
    at::native::copy_(contiguous, result);
  }
  return contiguous;
}

// ---- the CPU tensors of one call ------------------------------------------------------------------
// The CPU tensors a CPU kernel sees for the device tensors of one call: one per device tensor (the same tensor passed
// twice is one CPU tensor, so that a kernel sees what it would see on the CPU: TensorIterator then treats an output
// that is also an input as read-write and refuses to broadcast it, instead of resizing the caller's tensor), over
// one CPU storage per device storage (so that the kernel's overlap checks see two views of one memory as such).
class CpuAliases {
 public:
  struct Converted {
    at::Tensor original;  // the device tensor the caller passed
    at::Tensor cpu;       // the CPU tensor the kernel saw
    bool mutated;
  };
  struct StoragePair {
    c10::Storage device;
    c10::Storage cpu;
  };

  // `own_storages`: the call may resize a tensor it writes (an out= operator, or any call of the boxed fallback that
  // writes): its kernel sees CPU storages of its own, since resizing the CPU storage that device memory keeps with it
  // would free that memory. Any other call (one that only reads, an in-place operator of a direct kernel, which
  // never resizes `self`) reads and writes device memory through that storage.
  explicit CpuAliases(bool own_storages) : own_storages_(own_storages) {}

  at::Tensor of(const at::Tensor& t, bool mutated) {
    for (auto& converted : converted_) {
      if (converted.original.is_same(t)) {
        converted.mutated = converted.mutated || mutated;
        return converted.cpu;
      }
    }
    at::Tensor cpu = cpu_view(t, storage_for(t.storage()));
    converted_.push_back({t, cpu, mutated});
    return cpu;
  }

  // Makes each device tensor the kernel wrote show what it wrote (Trainium's 32-bit rounding included), resize
  // included.
  void write_back() {
    for (auto& converted : converted_) {
      if (converted.mutated) {
        write_back(converted);
      }
    }
  }

  const c10::SmallVector<Converted, 4>& converted() const {
    return converted_;
  }

  const c10::SmallVector<StoragePair, 4>& storages() const {
    return storages_;
  }

 private:
  c10::Storage storage_for(const c10::Storage& device_storage) {
    for (const auto& pair : storages_) {
      if (pair.device.is_alias_of(device_storage)) {
        return pair.cpu;
      }
    }
    storages_.push_back({device_storage, own_storages_ || settings().copy_aliasing ? cpu_view_storage(device_storage)
                                                                             : cpu_storage_of(device_storage)});
    return storages_.back().cpu;
  }

  static void write_back(Converted& converted) {
    if (settings().narrow_64bit) {
      const at::Tensor rounded = narrowed(converted.cpu);
      if (!rounded.is_same(converted.cpu)) {
        converted.cpu.copy_(rounded);
      }
    }
    auto* device_impl = converted.original.unsafeGetTensorImpl();
    auto* device_storage = device_impl->storage().unsafeGetStorageImpl();
    const auto& cpu_storage = converted.cpu.storage();
    if (cpu_storage.data() != device_storage->data()) {
      const size_t nbytes = cpu_storage.nbytes();
      if (nbytes > device_storage->nbytes()) {
        reallocate_storage(device_storage, nbytes);
      }
      if (nbytes > 0) {
        std::memcpy(device_storage->mutable_data(), cpu_storage.data(), nbytes);
      }
    }
    if (converted.cpu.sizes() != converted.original.sizes() ||
        converted.cpu.strides() != converted.original.strides() ||
        converted.cpu.storage_offset() != converted.original.storage_offset()) {
      device_impl->set_sizes_and_strides(
          converted.cpu.sizes(), converted.cpu.strides(), converted.cpu.storage_offset());
    }
  }

  bool own_storages_;
  c10::SmallVector<Converted, 4> converted_;
  c10::SmallVector<StoragePair, 4> storages_;
};

// ---- the boxed CPU fallback ----------------------------------------------------------------------
// One call of an operator without a neuron kernel: its device tensors become CPU tensors over the same
// memory, the CPU kernel runs, and its results become device tensors again.
class FallbackCall {
 public:
  FallbackCall(const c10::OperatorHandle& op, torch::jit::Stack* stack)
      : op_(op), stack_(stack), aliases_(writes(op.schema())) {}

  void run() {
    const auto& schema = op_.schema();
    const auto& arguments = schema.arguments();
    const size_t first = stack_->size() - arguments.size();
    for (size_t i = 0; i < arguments.size(); ++i) {
      const auto* alias = arguments[i].alias_info();
      to_cpu((*stack_)[first + i], arguments[i], alias != nullptr && alias->isWrite());
    }
    check_cpu_tensors();
    device_ = check_index(device_);
    if (!settings().rng_on_cpu) {  // else the CPU kernel draws from the CPU's default generator, as on Trainium
      for (size_t position : generator_slots_) {
        (*stack_)[position] = cpu_generator_of(default_generator(device_));
      }
    }
    if (settings().op_log) {
      record_op(op_, complex_inputs_ && !returns_view());
    }
    // What the conversions and the CPU kernel dispatch is this call's own work, not the model's.
    DeviceKernelScope own_work;
    if (settings().narrow_64bit && !returns_view()) {  // what an in-place or out= operator reads, too
      narrow_inputs(first, arguments);
    }
    op_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack_);
    aliases_.write_back();
    const size_t returns = schema.returns().size();
    for (size_t i = stack_->size() - returns; i < stack_->size(); ++i) {
      (*stack_)[i] = to_device(std::move((*stack_)[i]));
    }
  }

 private:
  static bool writes(const c10::FunctionSchema& schema) {
    return std::any_of(schema.arguments().begin(), schema.arguments().end(), [](const c10::Argument& argument) {
      return argument.alias_info() != nullptr && argument.alias_info()->isWrite();
    });
  }

  // A view operator (a return aliases an input without writing it), as opposed to an in-place or out= one.
  bool returns_view() const {
    for (const auto& ret : op_.schema().returns()) {
      if (ret.alias_info() != nullptr && !ret.alias_info()->isWrite()) {
        return true;
      }
    }
    return false;
  }

  void note_device(const at::Tensor& t, const char* argument) {
    const c10::Device device = t.device();
    if (!common_.has_value()) {
      common_ = device;
    } else if (*common_ != device) {
      TORCH_CHECK(
          false, "Expected all tensors to be on the same device, but found at least two devices, ", *common_,
          " and ", device, "! (when checking argument for argument ", argument, " in method ",
          op_.schema().operator_name(), ")");
    }
    if (device.type() == kNeuron && device_ < 0) {
      device_ = device.index();
    }
  }

  at::Tensor convert(const at::Tensor& t, const char* argument, bool mutated, bool index_list) {
    if (!on_device(t)) {
      // A CPU tensor beside device tensors is an error, as on any device, except zero-dim scalars
      // and CPU indices.
      if (t.defined() && t.dim() > 0 && !index_list) {
        cpu_tensors_.push_back({t, argument});
      }
      return t;
    }
    note_device(t, argument);
    complex_inputs_ = complex_inputs_ || (!mutated && t.is_complex());
    return aliases_.of(t, mutated);
  }

  void to_cpu(c10::IValue& value, const c10::Argument& argument, bool mutated) {
    const char* name = argument.name().c_str();
    if (value.isTensor()) {
      value = convert(value.toTensor(), name, mutated, false);
    } else if (value.isTensorList()) {
      auto list = value.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(list.size());
      for (const at::Tensor& t : list) {
        out.push_back(convert(t, name, mutated, false));
      }
      value = std::move(out);
    } else if (value.isList()) {
      auto list = value.toList();
      c10::impl::GenericList out(list.elementType());
      out.reserve(list.size());
      for (const c10::IValue& element : list) {
        out.push_back(element.isTensor() ? c10::IValue(convert(element.toTensor(), name, mutated, true)) : element);
      }
      value = std::move(out);
    } else if (value.isDevice() && value.toDevice().type() == kNeuron) {
      if (device_ < 0) {
        device_ = value.toDevice().index();
      }
      value = c10::Device(c10::kCPU);
    } else if (value.isGenerator()) {
      // A neuron generator is the CPU generator it draws from; with rng_on_cpu the CPU kernel gets it as it is, and
      // refuses it, as the CPU kernels of the real backend's fallback do.
      const auto& generator = value.toGenerator();
      if (generator.device().type() == kNeuron && !settings().rng_on_cpu) {
        value = cpu_generator_of(generator);
      }
    } else if (value.isNone() && argument.type()->kind() == c10::TypeKind::OptionalType &&
               argument.type()->castRaw<c10::OptionalType>()->getElementType()->kind() ==
                   c10::TypeKind::GeneratorType) {
      generator_slots_.push_back(&value - stack_->data());
    }
  }

  void check_cpu_tensors() const {
    if (!common_.has_value()) {
      return;
    }
    for (const auto& [tensor, argument] : cpu_tensors_) {
      TORCH_CHECK(
          false, "Expected all tensors to be on the same device, but found at least two devices, ", *common_,
          " and cpu! (when checking argument for argument ", argument, " in method ",
          op_.schema().operator_name(), ")");
    }
  }

  // Trainium computes 64-bit types in 32 bits: round 64-bit inputs through their 32-bit type.
  void narrow_inputs(size_t first, const std::vector<c10::Argument>& arguments) {
    for (size_t i = 0; i < arguments.size(); ++i) {
      c10::IValue& value = (*stack_)[first + i];
      if (value.isTensor() && arguments[i].alias_info() == nullptr) {
        value = narrowed(value.toTensor());
      }
    }
  }

  at::Tensor tensor_to_device(at::Tensor t) {
    if (!t.defined() || t.device().type() != c10::kCPU) {
      return t;
    }
    TORCH_CHECK(
        t.layout() == c10::kStrided, "The neuron device supports dense strided tensors only: ",
        op_.schema().operator_name(), " returned a ", t.layout(), " tensor");
    if (t._is_zerotensor()) {
      return efficient_zero_tensor(t.sizes(), t.scalar_type(), std::nullopt, c10::Device(kNeuron, device_), false);
    }
    TORCH_CHECK(
        t.numel() == 0 ||
            at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.itemsize(), t.storage_offset()) <=
                t.storage().nbytes(),
        "The neuron device cannot adopt the result of ", op_.schema().operator_name(),
        ": its CPU kernel returned a tensor whose memory does not cover its shape");
    for (const auto& converted : aliases_.converted()) {
      if (converted.cpu.is_same(t)) {
        return converted.original;  // in-place and out= results are the caller's own tensor
      }
    }
    if (!settings().copy_aliasing) {
      for (const auto& pair : aliases_.storages()) {
        if (pair.cpu.is_alias_of(t.storage())) {
          return tensor_over(pair.device, t, kNeuronKey);  // a view of an input: the same device memory
        }
      }
    }
    for (const auto& pair : adopted_) {
      if (pair.cpu.is_alias_of(t.storage())) {
        return tensor_over(pair.device, t, kNeuronKey);  // another view of an earlier result
      }
    }
    if (settings().narrow_64bit) {
      t = narrowed(t);
    }
    if (!returns_view()) {
      t = backend_layout(std::move(t), [this] {
        return native_on_trainium(c10::toString(op_.schema().operator_name()));
      });
    }
    at::Tensor result = adopt_result(std::move(t), device_);
    adopted_.push_back({result.storage(), cpu_storage_of(result.storage())});
    return result;
  }

  c10::IValue to_device(c10::IValue value) {
    if (value.isTensor()) {
      return tensor_to_device(std::move(value).toTensor());
    }
    if (value.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : value.toTensorList()) {
        out.push_back(tensor_to_device(t));
      }
      return out;
    }
    return value;
  }

  const c10::OperatorHandle& op_;
  torch::jit::Stack* stack_;
  c10::DeviceIndex device_ = -1;
  std::optional<c10::Device> common_;
  CpuAliases aliases_;
  c10::SmallVector<CpuAliases::StoragePair, 2> adopted_;  // results: their device storage over the CPU storage
  c10::SmallVector<std::pair<at::Tensor, const char*>, 2> cpu_tensors_;
  c10::SmallVector<size_t, 1> generator_slots_;
  bool complex_inputs_ = false;
};

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  FallbackCall call(op, stack);
  call.run();
}

// ---- direct kernels --------------------------------------------------------------------------------
// The hottest operators of a model (a tiny Llama's forward is two thirds mul, add, mm and cat; an optimizer step is
// out= and in-place operators) run as the boxed fallback runs them, with the CPU kernel on aliases of device memory,
// but unboxed: the CPU kernel is called directly (`at::cpu::`), no stack of IValues is built and no schema is walked.
// A call takes this path only when it needs none of the fallback's general handling — every tensor a dense device
// tensor of one device (or a zero-dim CPU tensor, a Python number, as an input), none complex (complex calls fall
// back on Trainium: the fallback logs them so), no 64-bit input under 64-bit narrowing that the rounding would
// change, no copy-aliasing; any other call is handed to the boxed fallback, unchanged. What the call logs, the memory
// it accounts, the layout of its result and what it writes into its `self` or `out` are the fallback's.
class DirectCall {
 public:
  // `writes`: the operator writes its `self` or `out` (in-place and out= operators); `resizes`: it may resize what it
  // writes (out= operators).
  DirectCall(bool writes, bool resizes) : writes_(writes), aliases_(/*own_storages=*/resizes) {}

  bool admit(const at::Tensor& t) {
    if (!t.defined()) {
      return false;
    }
    if (t.device().type() != kNeuron) {
      return t.dim() == 0 && t.device().is_cpu() && !t.is_complex();
    }
    return admit_device_tensor(t) &&
           (!settings().narrow_64bit || !is_64bit(t.scalar_type()) || unchanged_by_narrowing(t));
  }

  // The tensor the kernel writes (`self` of an in-place operator, `out` of an out= one): a device tensor, whose
  // values in are not rounded (the fallback rounds what the kernel wrote).
  bool admit(at::Tensor& t) {
    return t.defined() && t.device().type() == kNeuron && admit_device_tensor(t);
  }

  bool admit(const at::ITensorListRef& tensors) {
    for (const at::Tensor& t : tensors) {
      if (!admit(t)) {
        return false;
      }
    }
    return true;
  }

  // Arguments that hold no tensor pass as they are (another type fails to compile, rather than passing unconverted).
  template <typename T>
  bool admit(const T& /*value*/) {
    static_assert(is_plain<T>, "a direct kernel takes tensors, tensor lists and these plain argument types only");
    return true;
  }

  // Whether some tensor was on the device (a call of CPU scalars only is not the device's to run).
  bool on_device() const {
    return device_ >= 0 && !settings().copy_aliasing;
  }

  at::Tensor cpu(const at::Tensor& t) {
    if (t.device().type() != kNeuron) {
      return settings().narrow_64bit ? narrowed_number(t) : t;
    }
    if (writes_) {
      return aliases_.of(t, /*mutated=*/false);
    }
    // A call that writes no tensor reads its inputs only: their identity does not matter to the kernel, and the CPU
    // storage that device memory keeps with it serves.
    return views_.lend(cpu_storage_of(t.storage()), t);
  }

  at::Tensor cpu(at::Tensor& t) {
    return aliases_.of(t, /*mutated=*/true);
  }

  std::vector<at::Tensor> cpu(const at::ITensorListRef& tensors) {
    std::vector<at::Tensor> out;
    out.reserve(tensors.size());
    for (const at::Tensor& t : tensors) {
      out.push_back(cpu(t));
    }
    return out;
  }

  template <typename T>
  const T& cpu(const T& value) const {
    return value;
  }

  // The CPU kernel's new result as a device tensor: the fallback's rules for a native operator's result.
  at::Tensor result(at::Tensor t) const {
    if (settings().narrow_64bit) {
      t = narrowed(t);
    }
    return adopt_result(backend_layout(std::move(t), [] { return true; }), device_);
  }

  // What the CPU kernel wrote into its `self` or `out`, shown by the caller's device tensor.
  void write_back() {
    aliases_.write_back();
  }

 private:
  bool admit_device_tensor(const at::Tensor& t) {
    if (device_ < 0) {
      device_ = t.device().index();
    }
    return t.device().index() == device_ && t.layout() == c10::kStrided && !t.is_complex() && !t.is_neg() &&
           !t._is_zerotensor();
  }

  template <typename T>
  static constexpr bool is_plain = std::is_same_v<T, at::Scalar> || std::is_same_v<T, int64_t> ||
                                   std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                                   std::is_same_v<T, c10::string_view> || std::is_same_v<T, c10::ScalarType> ||
                                   std::is_same_v<T, at::OptionalIntArrayRef> ||
                                   std::is_same_v<T, std::optional<c10::ScalarType>>;
  bool writes_;
  c10::DeviceIndex device_ = -1;
  CpuAliases aliases_;  // for a call that writes: the fallback's rules of identity
  CpuViewPool views_;   // for a call that only reads
};

// The tensor an in-place or out= operator writes and returns: its one non-const tensor argument.
inline at::Tensor* written(at::Tensor& t) {
  return &t;
}

template <typename T>
at::Tensor* written(const T& /*value*/) {
  return nullptr;
}

// `Op` (an `at::_ops` operator) with `cpu_kernel`, its CPU kernel (`at::cpu::`; `_outf` for an out= operator, whose
// arguments come in the schema's order), as a direct kernel: an operator that returns a new tensor, or one that
// writes its `self` or `out` and returns it.
template <class Op, class Schema, Schema* cpu_kernel>
struct Direct;

template <class Op, class Return, class... Args, Return (*cpu_kernel)(Args...)>
struct Direct<Op, Return(Args...), cpu_kernel> {
  static_assert(std::is_same_v<Return, at::Tensor> || std::is_same_v<Return, at::Tensor&>);

  // As the dispatcher spells it (`aten::mul.Tensor`), as the operator log and trainium_ops.toml name it.
  static std::string name() {
    return c10::toString(c10::OperatorName(Op::name, Op::overload_name));
  }

  static Return call(Args... args) {
    constexpr bool writes = std::is_same_v<Return, at::Tensor&>;
    constexpr bool in_place = std::is_same_v<std::tuple_element_t<0, std::tuple<Args...>>, at::Tensor&>;
    DirectCall direct(writes, writes && !in_place);
    if (!(direct.admit(args) && ...) || !direct.on_device()) {
      static const c10::OperatorHandle op =
          c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
      return c10::impl::BoxedKernelWrapper<Return(Args...)>::call(
          c10::BoxedKernel::makeFromFunction<&cpu_fallback>(), op, c10::DispatchKeySet(), args...);
    }
    if (settings().op_log) {
      static const std::string logged_name = name();
      static LoggedOp* const logged = logged_op(logged_name.c_str());
      record(logged);
    }
    DeviceKernelScope own_work;  // what the CPU kernel dispatches is this call's own work, not the model's
    auto cpu_args = std::make_tuple(direct.cpu(args)...);
    if constexpr (std::is_same_v<Return, at::Tensor>) {
      return direct.result(std::apply(cpu_kernel, cpu_args));
    } else {
      std::apply(cpu_kernel, cpu_args);
      direct.write_back();
      at::Tensor* target = nullptr;
      ((target = target != nullptr ? target : written(args)), ...);
      return *target;
    }
  }
};

// A direct kernel's name (as the dispatcher spells it) and how to register it on a library.
struct DirectKernel {
  std::string name;
  void (*impl)(torch::Library& library, const char* name);
};

template <class Op, typename Op::schema* cpu_kernel>
DirectKernel direct() {
  using Kernel = Direct<Op, typename Op::schema, cpu_kernel>;
  return {Kernel::name(), [](torch::Library& library, const char* name) {
            library.impl(name, TORCH_FN(Kernel::call));
          }};
}

// The operators with a direct kernel: the hottest of tiny models' forward and backward passes and of an optimizer
// step (counted with the operator log), each with a CPU kernel of its own.
const std::vector<DirectKernel>& direct_kernels() {
  static const std::vector<DirectKernel> kernels = {
      direct<ATEN_OP2(add, Tensor), &at::cpu::add>(),
      direct<ATEN_OP2(sub, Tensor), &at::cpu::sub>(),
      direct<ATEN_OP2(mul, Tensor), &at::cpu::mul>(),
      direct<ATEN_OP2(div, Tensor), &at::cpu::div>(),
      direct<ATEN_OP(mm), &at::cpu::mm>(),
      direct<ATEN_OP(bmm), &at::cpu::bmm>(),
      direct<ATEN_OP(addmm), &at::cpu::addmm>(),
      direct<ATEN_OP(cat), &at::cpu::cat>(),
      direct<ATEN_OP(neg), &at::cpu::neg>(),
      direct<ATEN_OP(rsqrt), &at::cpu::rsqrt>(),
      direct<ATEN_OP(silu), &at::cpu::silu>(),
      direct<ATEN_OP2(pow, Tensor_Scalar), &at::cpu::pow>(),
      direct<ATEN_OP2(mean, dim), &at::cpu::mean>(),
      direct<ATEN_OP2(sum, dim_IntList), &at::cpu::sum>(),
      direct<ATEN_OP(_softmax), &at::cpu::_softmax>(),
      direct<ATEN_OP(exp), &at::cpu::exp>(),
      direct<ATEN_OP(tanh), &at::cpu::tanh>(),
      direct<ATEN_OP(sigmoid), &at::cpu::sigmoid>(),
      direct<ATEN_OP(gelu), &at::cpu::gelu>(),
      direct<ATEN_OP(silu_backward), &at::cpu::silu_backward>(),
      direct<ATEN_OP(gelu_backward), &at::cpu::gelu_backward>(),
      direct<ATEN_OP(_softmax_backward_data), &at::cpu::_softmax_backward_data>(),
      direct<ATEN_OP(threshold_backward), &at::cpu::threshold_backward>(),
      direct<ATEN_OP(sqrt), &at::cpu::sqrt>(),
      direct<ATEN_OP(sin), &at::cpu::sin>(),
      direct<ATEN_OP(cos), &at::cpu::cos>(),
      direct<ATEN_OP(index_select), &at::cpu::index_select>(),
      direct<ATEN_OP2(where, self), &at::cpu::where>(),
      // out= operators: what a functional operator's composite calls on the real backend's routes
      direct<ATEN_OP2(add, out), &at::cpu::add_outf>(),
      direct<ATEN_OP2(sub, out), &at::cpu::sub_outf>(),
      direct<ATEN_OP2(mul, out), &at::cpu::mul_outf>(),
      direct<ATEN_OP2(div, out), &at::cpu::div_outf>(),
      direct<ATEN_OP2(addcmul, out), &at::cpu::addcmul_outf>(),
      direct<ATEN_OP2(addcdiv, out), &at::cpu::addcdiv_outf>(),
      direct<ATEN_OP2(pow, Tensor_Scalar_out), &at::cpu::pow_outf>(),
      direct<ATEN_OP2(le, Tensor_out), &at::cpu::le_outf>(),
      direct<ATEN_OP2(arange, start_out), &at::cpu::arange_outf>(),
      direct<ATEN_OP2(sqrt, out), &at::cpu::sqrt_outf>(),
      direct<ATEN_OP2(mm, out), &at::cpu::mm_outf>(),
      direct<ATEN_OP2(bmm, out), &at::cpu::bmm_outf>(),
      // in-place operators
      direct<ATEN_OP2(add_, Tensor), &at::cpu::add_>(),
      direct<ATEN_OP2(sub_, Tensor), &at::cpu::sub_>(),
      direct<ATEN_OP2(mul_, Tensor), &at::cpu::mul_>(),
      direct<ATEN_OP2(div_, Tensor), &at::cpu::div_>(),
      direct<ATEN_OP(addcmul_), &at::cpu::addcmul_>(),
      direct<ATEN_OP(addcdiv_), &at::cpu::addcdiv_>(),
      direct<ATEN_OP2(lerp_, Scalar), &at::cpu::lerp_>(),
      direct<ATEN_OP(zero_), &at::cpu::zero_>(),
      direct<ATEN_OP2(fill_, Scalar), &at::cpu::fill_>(),
  };
  return kernels;
}

void refuse_layout(const c10::OperatorHandle& op, torch::jit::Stack* /*stack*/) {
  TORCH_CHECK(
      false, "The neuron device supports dense strided tensors only: ", op.schema().operator_name(),
      " was called with a sparse, quantized or nested tensor on neuron. Keep such tensors on the CPU, or make "
      "them dense with .to_dense() before moving them to neuron.");
}

} // namespace

bool running_compiled_graph() {
  return in_compiled_graph;
}

bool set_in_compiled_graph(bool on) {
  const bool previous = in_compiled_graph;
  in_compiled_graph = on;
  return previous;
}

at::Tensor cpu_alias_of(const at::Tensor& t) {
  return cpu_view(t);
}

at::Tensor adopt_cpu_tensor(at::Tensor cpu, c10::DeviceIndex index) {
  return adopt_result(std::move(cpu), index);
}

int route_cpu_kernels() {
  // A composite kernel wins over a backend fallback, so an op with both a dedicated CPU kernel and a composite
  // one would not run its CPU kernel here: CompositeExplicitAutograd ones are decompositions (different
  // numerics), CompositeExplicitAutogradNonFunctional ones (structured ops) allocate and call the out= variant
  // (an extra dispatch per call, and spurious resize warnings).
  static auto* library = new torch::Library(
      torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  int routed = 0;
  auto& dispatcher = c10::Dispatcher::singleton();
  const auto& kernels = direct_kernels();
  for (const auto& name : dispatcher.getAllOpNames()) {
    auto op = dispatcher.findOp(name);
    if (name.name.rfind("aten::", 0) != 0 || !op.has_value() ||
        !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) || op->hasKernelForDispatchKey(kNeuronKey)) {
      continue;
    }
    const std::string short_name = name.name.substr(6) + (name.overload_name.empty() ? "" : "." + name.overload_name);
    const std::string full_name = c10::toString(name);
    const auto found = std::find_if(kernels.begin(), kernels.end(), [&](const auto& k) { return k.name == full_name; });
    if (!(op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional))) {
      if (found != kernels.end()) {  // the fallback's call, unboxed (no route to choose: the op has no composite)
        found->impl(*library, short_name.c_str());
      }
      continue;
    }
    // With the real backend's routes, an op it does not implement takes its composite kernel, which dispatches
    // its parts (a structured op's out= variant, a decomposition): what Trainium runs, and what its log shows.
    if (settings().trainium_dispatch && !native_on_trainium(full_name)) {
      continue;
    }
    if (found != kernels.end()) {
      found->impl(*library, short_name.c_str());
    } else {
      library->impl(short_name.c_str(), torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
    }
    ++routed;
  }
  if (settings().trainium_dispatch) {
    // TorchNeuron implements argsort.stable in C++; its composite would dispatch sort.stable, which it does not.
    // Its outputs are indices (no gradient), so a backend kernel in place of the composite loses nothing.
    library->impl("argsort.stable", torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
    ++routed;
  }
  return routed;
}

std::vector<std::string>& own_kernel_names() {
  static std::vector<std::string> names;
  return names;
}

std::vector<std::string> own_kernels() {
  return own_kernel_names();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  own(m, "empty.memory_format", empty_memory_format);
  own(m, "empty_strided", empty_strided);
  own(m, "as_strided", as_strided);
  own(m, "view", view);
  own(m, "_reshape_alias", reshape_alias);
  own(m, "resize_", resize_);
  own(m, "set_.source_Storage_storage_offset", set_storage);
  own(m, "set_.source_Storage", set_source_storage);
  own(m, "set_.source_Tensor", set_source_tensor);
  own(m, "set_", set_empty);
  own(m, "_copy_from", copy_from);
  own(m, "_copy_from_and_resize", copy_from_and_resize);
  own(m, "_local_scalar_dense", local_scalar_dense);
  own(m, "_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
  own(m, "_efficientzerotensor", efficient_zero_tensor);
  own(m, "record_stream", record_stream);
  own(m, "native_dropout", native_dropout);
  own(m, "_to_copy", to_copy);
}

// `contiguous` is a composite (clone) ATen runs above the backend: its check runs at the autograd key too, so that a
// tensor that requires grad is checked, and the clone it calls is recorded as on the CPU. TorchNeuron registers its
// kernel at the backend key only (torch_neuronx/python_ops/auto_registration.py), below the Python key: a tensor a
// Python mode holds (a FakeTensor while torch.compile traces, a FunctionalTensor) goes to its mode, which decomposes
// the composite, and never reaches TorchNeuron's check. So at the autograd key, above that mode, such a tensor is not
// checked: the trace of `interpolate` (whose decomposition asks for the channels-last layout its input's strides
// suggest) compiles as on Trainium.
at::Tensor contiguous_above_python_modes(const at::Tensor& self, c10::MemoryFormat memory_format) {
  if (self.key_set().has(c10::DispatchKey::Python)) {
    return at::native::contiguous(self, memory_format);
  }
  return contiguous(self, memory_format);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("contiguous", contiguous);
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("contiguous", contiguous_above_python_modes);
}

// Our copies honour the conjugate and negative bits themselves (the CPU copy resolves them); the generic
// Conjugate/Negative fallbacks would materialise through clone -> copy_ -> _copy_from: endless recursion.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

// Ops whose composite kernels choose an implementation by device type and reject unknown backends
// (convolution picks `convolution_overrideable`, which throws; `mode.values` accepts CPU, CUDA and XPU only),
// or compare the addresses of their arguments, which a boxed call does not keep (`addr_` passes `self` as
// `out`: on the CPU the kernel sees one tensor and refuses a self it would have to resize): run them with the
// CPU kernels too.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"convolution", "convolution_backward", "mode.values", "addr_"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
  }
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_layout>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_layout>());
}

TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_layout>());
}

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_layout>());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

} // namespace hf_neuron
