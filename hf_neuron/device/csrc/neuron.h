// The reference `neuron` device: a PrivateUse1 backend whose memory is host memory.
//
// Declarations shared by the translation units:
//   runtime.cpp   device state, allocators, device guard, generators, hooks
//   kernels.cpp   the few native kernels a backend must own, and the zero-copy CPU fallback
//   autocast.cpp  AutocastPrivateUse1 registrations (CUDA's op policies)
//   bindings.cpp  the Python module (`_C`) that hf_neuron.device.module wraps
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hf_neuron {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;

// ---- configuration (set once by Python before the device is used) -------------------------------
struct Settings {
  c10::DeviceIndex device_count = 2;
  bool narrow_64bit = false;          // compute float64/int64 in 32 bits, as Trainium does
  bool strict_memory_formats = false; // refuse channels-last and other formats
  int64_t capacity_bytes = -1;        // per device; -1 = unlimited
  bool op_log = false;                // count every operator that runs on the device
  bool warn_fallback = false;         // warn once per op listed in trainium_fallback_ops
  bool copy_aliasing = false;         // debug: run CPU kernels on copies, not aliases
};
Settings& settings();
void configure(const Settings& s, const std::vector<std::string>& trainium_fallback_ops);

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

// ---- generators ------------------------------------------------------------------------------
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
// The CPU generator that a device generator draws from (CPU kernels accept only CPU generators).
at::Generator cpu_generator_of(const at::Generator& generator);

// ---- kernels ------------------------------------------------------------------------------------
// Makes every aten op that has both a CPU kernel and a composite kernel run the CPU kernel; returns how many.
int route_cpu_kernels();
// scaled_dot_product_attention's kernel choice for the device: the CPU's.
int64_t fused_sdp_choice(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& mask,
    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa);

// ---- operator log ----------------------------------------------------------------------------
void record_op(const c10::OperatorHandle& op);
std::unordered_map<std::string, int64_t> executed_ops();
void clear_op_log();

} // namespace hf_neuron
