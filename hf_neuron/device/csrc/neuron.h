// The reference `neuron` device: a PrivateUse1 backend whose memory is host memory.
//
// Declarations shared by the translation units:
//   runtime.cpp   device state, allocators, device guard, generators, hooks
//   kernels.cpp   the few native kernels a backend must own, and the zero-copy CPU fallback
//   attention.cpp the fused attention kernel the real backend picks for scaled_dot_product_attention
//   autocast.cpp  AutocastPrivateUse1 registrations (CUDA's op policies)
//   bindings.cpp  the Python module (`_C`) that hf_neuron.device.module wraps
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hf_neuron {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;

// A thread-local variable of this library, reached without a call to `__tls_get_addr` (the initial-exec model: the
// library's few bytes of them live in the static TLS block, which has room for them when Python loads the library).
// Most of them are read by every operator the device runs.
#define HF_NEURON_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))

// ---- configuration (set once by Python before the device is used) -------------------------------
struct Settings {
  c10::DeviceIndex device_count = 2;
  bool narrow_64bit = false;          // compute float64/int64 in 32 bits, as Trainium does
  bool strict_memory_formats = false; // refuse channels-last and other formats
  int64_t capacity_bytes = -1;        // per device; -1 = unlimited
  bool op_log = false;                // count every operator that runs on the device
  bool warn_fallback = false;         // warn once per operator that would fall back on Trainium
  bool copy_aliasing = false;         // debug: run CPU kernels on copies, not aliases
  bool trainium_dispatch = false;     // take the real backend's dispatch routes (composites, attention)
  bool rng_on_cpu = false;            // random operators draw from the CPU's default generator
};
Settings& settings();

// Which operators the real backend runs natively (hf_neuron/device/trainium_ops.toml), by dispatcher name
// (`aten::name` or `aten::name.overload`): an operator the device dispatches is a fallback on Trainium when it is
// in `measured_fallback` (a Trainium run measured it) or, without a measurement, in neither `native` nor `unlogged`.
struct TrainiumOps {
  std::vector<std::string> native;
  std::vector<std::string> unlogged;
  std::vector<std::string> measured_fallback;
  bool measured = false;
};
void configure(const Settings& s, const TrainiumOps& ops);
bool native_on_trainium(const std::string& name);
// Whether this thread is running a compiled graph's operators (torch.compile(backend="neuron") runs them one by one):
// their results then keep the strides the graph was traced with, the CPU's. Returns the previous value.
bool set_in_compiled_graph(bool on);
// Whether this thread is running a compiled graph (set by the dynamo backend around it).
bool running_compiled_graph();

// ---- devices ---------------------------------------------------------------------------------
c10::DeviceIndex device_count();
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);
// The device a thread starts on (the local rank under torchrun, as on the real backend).
void set_default_device(c10::DeviceIndex index);
// Throws a clear error for an index outside 0..device_count()-1; resolves -1 to the current device.
c10::DeviceIndex check_index(c10::DeviceIndex index);
// Throws the "use the 'spawn' start method" error in a forked child of a process that used the device.
void check_not_forked();
bool in_bad_fork();
bool initialized();

// ---- memory ----------------------------------------------------------------------------------
c10::Allocator* device_allocator();
c10::Allocator* pinned_allocator();
bool is_pinned(const void* ptr);
// Makes the memory of a CPU storage a device storage of `index` (no copy; keeps `cpu` alive).
c10::Storage adopt_cpu_storage(const c10::Storage& cpu, c10::DeviceIndex index);
// The CPU storage over the memory of a device storage that the device keeps with it: the storage a CPU kernel's
// result came in, or the one device memory is allocated in (every device storage has one). For reading only: a
// kernel that resized it would free the device's memory.
const c10::Storage& cpu_storage_of(const c10::Storage& device);
// Replaces the memory of a device storage by `nbytes` fresh device bytes (contents copied up to min size).
void reallocate_storage(c10::StorageImpl* storage, size_t nbytes);

struct MemoryStats {
  int64_t allocated = 0;
  int64_t peak = 0;
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t ooms = 0;
};
MemoryStats memory_stats(c10::DeviceIndex index);
void reset_peak(c10::DeviceIndex index);
// (free, total) bytes of a device: its capacity when one is set, else the host's memory (MemAvailable, total).
std::pair<size_t, size_t> memory_info(c10::DeviceIndex index);

// ---- generators ------------------------------------------------------------------------------
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
// The CPU generator that a device generator draws from (CPU kernels accept only CPU generators).
at::Generator cpu_generator_of(const at::Generator& generator);
// The generator a random operator on device `index` draws from when none is given: the device's (its CPU
// generator), or with rng_on_cpu the CPU's default generator, as on Trainium.
at::Generator generator_for(c10::DeviceIndex index);

// ---- kernels ------------------------------------------------------------------------------------
// Makes aten ops that have both a CPU kernel and a composite kernel run the CPU kernel (with trainium_dispatch,
// only those the real backend implements: the others take their composite, as on Trainium); returns how many.
int route_cpu_kernels();
// The ops this library registers with a kernel of its own (not the CPU fallback) for PrivateUse1.
std::vector<std::string> own_kernels();
std::vector<std::string>& own_kernel_names();
// Registers `kernel`, a kernel of this library, for `name` (e.g. "view") on PrivateUse1, and notes it.
template <typename Kernel>
void own(torch::Library& m, const char* name, Kernel&& kernel) {
  own_kernel_names().push_back(std::string("aten::") + name);
  m.impl(name, std::forward<Kernel>(kernel));
}
// A CPU tensor over the memory of device tensor `t` (a copy in copy-aliasing mode).
at::Tensor cpu_alias_of(const at::Tensor& t);
// A device tensor of `index` over the memory of CPU tensor `cpu` (the device adopts it, no copy): `cpu` itself when
// nothing else holds it (pass it moved).
at::Tensor adopt_cpu_tensor(at::Tensor cpu, c10::DeviceIndex index);

// ---- operator log ----------------------------------------------------------------------------
// Counts one call of `op` (the boxed CPU fallback) or of the operator named `name` (a kernel of our own, a string
// literal), unless the call comes from inside one of the device's own kernels (a DeviceKernelScope).
// `complex_inputs`: the call has complex tensor inputs, which a native kernel of the real backend cannot take (the
// Neuron compiler refuses complex types, NCC_EVRF004): it runs on the CPU and reports itself as a fallback.
void record_op(const c10::OperatorHandle& op, bool complex_inputs = false);
void record_named(const char* name);
// An operator's entry in the log: its dispatcher name, whether its calls fall back on Trainium, and their count since
// the log was cleared.
struct LoggedOp {
  std::string name;
  bool complex_calls = false;  // it counts an operator's calls with complex inputs
  bool fallback = false;
  std::atomic<int64_t> calls{0};
};
// The entry of our own kernel named `name`, which outlives the process's kernels (a string literal, a static string):
// a call site that logs every call looks it up once, then counts with `record` (what `record_named` does per call).
LoggedOp* logged_op(const char* name);
void record(LoggedOp* op);
std::unordered_map<std::string, int64_t> executed_ops();
std::unordered_map<std::string, int64_t> fallback_ops();
void clear_op_log();

// While alive, the operators this thread dispatches are the device kernel's own work, not the model's: they are not
// logged (the real backend's kernels do their work below the dispatcher). Records `name` first when given.
class DeviceKernelScope {
 public:
  explicit DeviceKernelScope(const char* name = nullptr);
  ~DeviceKernelScope();
  DeviceKernelScope(const DeviceKernelScope&) = delete;
  DeviceKernelScope& operator=(const DeviceKernelScope&) = delete;
};

} // namespace hf_neuron
