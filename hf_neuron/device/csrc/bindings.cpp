// The Python module of the reference device; hf_neuron/device/module.py builds `torch.neuron` on it.
#include "neuron.h"

#include <torch/csrc/Generator.h>
#include <torch/extension.h>

namespace py = pybind11;

namespace {

void configure(
    int device_count, int default_device, bool narrow_64bit, bool strict_memory_formats, int64_t capacity_bytes,
    bool op_log, bool warn_fallback, bool copy_aliasing, bool trainium_dispatch, bool rng_on_cpu,
    const std::vector<std::string>& native, const std::vector<std::string>& unlogged,
    const std::vector<std::string>& measured_fallback, bool measured) {
  hf_neuron::Settings s;
  s.device_count = static_cast<c10::DeviceIndex>(device_count);
  s.narrow_64bit = narrow_64bit;
  s.strict_memory_formats = strict_memory_formats;
  s.capacity_bytes = capacity_bytes;
  s.op_log = op_log;
  s.warn_fallback = warn_fallback;
  s.copy_aliasing = copy_aliasing;
  s.trainium_dispatch = trainium_dispatch;
  s.rng_on_cpu = rng_on_cpu;
  hf_neuron::configure(s, hf_neuron::TrainiumOps{native, unlogged, measured_fallback, measured});
  hf_neuron::set_default_device(static_cast<c10::DeviceIndex>(default_device));
  hf_neuron::route_cpu_kernels();
}

py::dict memory_stats(int index) {
  const auto stats = hf_neuron::memory_stats(static_cast<c10::DeviceIndex>(index));
  py::dict out;
  out["allocated"] = stats.allocated;
  out["peak"] = stats.peak;
  out["allocations"] = stats.allocations;
  out["frees"] = stats.frees;
  out["ooms"] = stats.ooms;
  return out;
}

// A CPU tensor over the memory of neuron tensor `t` (zero copy; it keeps `t`'s storage alive). The `neuron` c10d
// backend hands these to gloo, which refuses PrivateUse1 tensors.
at::Tensor cpu_alias(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == hf_neuron::kNeuron, "cpu_alias expects a neuron tensor, got one on ", t.device());
  c10::Storage storage = t.storage();
  return at::for_blob(storage.mutable_data(), t.sizes())
      .strides(t.strides())
      .storage_offset(t.storage_offset())
      .deleter([storage](void* /*data*/) {})
      .options(t.options().device(c10::kCPU))
      .make_tensor();
}

// One tiny backward on each device, waited for with the GIL released. Autograd's thread for a device drops its last
// reference to a backward's task after the caller has returned, and that task's thread-local state holds a Python
// object (torch.autograd stashes the caller's contextvars context in it), so the drop takes the GIL: after the
// interpreter has begun to finalize, CPython ends a thread that takes the GIL, here from inside a C++ destructor, and
// the process aborts ("terminate called without an active exception") with its work done. A thread finishes what
// it was doing before it takes the next task, so once these backwards return, every earlier task has been dropped;
// their own tasks hold no Python object.
void drain_autograd_threads() {
  py::gil_scoped_release no_gil;
  at::AutoGradMode grad_mode(true);
  for (c10::DeviceIndex index = 0; index < hf_neuron::device_count(); ++index) {
    at::Tensor x = at::zeros({}, at::TensorOptions().device(hf_neuron::kNeuron, index)).requires_grad_(true);
    torch::autograd::grad({x * 2}, {x});
  }
}

py::object default_generator(int index) {
  const auto& generator = hf_neuron::default_generator(static_cast<c10::DeviceIndex>(index));
  return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(generator));
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "hf-neuron reference device runtime";
  m.def("configure", &configure);
  m.def("device_count", [] { return static_cast<int>(hf_neuron::device_count()); });
  m.def("current_device", [] { return static_cast<int>(hf_neuron::current_device()); });
  m.def("set_device", [](int index) { hf_neuron::set_current_device(static_cast<c10::DeviceIndex>(index)); });
  m.def("check_index", [](int index) { return static_cast<int>(hf_neuron::check_index(index)); });
  m.def("memory_stats", &memory_stats);
  m.def("memory_info", [](int index) { return hf_neuron::memory_info(static_cast<c10::DeviceIndex>(index)); });
  m.def("reset_peak", [](int index) { hf_neuron::reset_peak(static_cast<c10::DeviceIndex>(index)); });
  m.def("capacity", [] { return hf_neuron::settings().capacity_bytes; });
  m.def("default_generator", &default_generator);
  m.def("cpu_alias", &cpu_alias);
  m.def("executed_ops", &hf_neuron::executed_ops);
  m.def("fallback_ops", &hf_neuron::fallback_ops);
  m.def("own_kernels", &hf_neuron::own_kernels);
  m.def("clear_op_log", &hf_neuron::clear_op_log);
  // For scripts/bench_device.py: the op log on or off in a running process (what it costs).
  m.def("set_op_log", [](bool on) { hf_neuron::settings().op_log = on; });
  m.def("set_in_compiled_graph", &hf_neuron::set_in_compiled_graph);
  m.def("in_bad_fork", &hf_neuron::in_bad_fork);
  m.def("initialized", &hf_neuron::initialized);
  m.def("drain_autograd_threads", &drain_autograd_threads);
}
