// Device state, allocators, device guard (devices, streams, events), generators and hooks.
#include "neuron.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_set>

namespace hf_neuron {

namespace {

constexpr int kMaxDevices = 128;

Settings g_settings;
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_bad_fork{false};
c10::DeviceIndex g_default_device = 0;
HF_NEURON_THREAD_LOCAL c10::DeviceIndex tls_device = -1;

void on_fork_child() {
  if (g_initialized.load()) {
    g_bad_fork.store(true);
  }
}

void mark_initialized() {
  if (!g_initialized.load(std::memory_order_relaxed)) {
    g_initialized.store(true);
  }
}

std::string gib(int64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return buffer;
}

// ---- memory accounting -------------------------------------------------------------------------
// Counted without a lock (an allocation is the hottest call there is): two allocations that together pass the
// capacity may both be refused where one of them would have fitted.
struct DeviceMemory {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
  std::atomic<int64_t> frees{0};
  std::atomic<int64_t> ooms{0};
};
std::array<DeviceMemory, kMaxDevices> g_memory;

void account(c10::DeviceIndex index, size_t nbytes) {
  auto& memory = g_memory[index];
  const auto bytes = static_cast<int64_t>(nbytes);
  const int64_t allocated = memory.allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  const int64_t capacity = g_settings.capacity_bytes;
  if (capacity >= 0 && allocated > capacity) {
    memory.allocated.fetch_sub(bytes, std::memory_order_relaxed);
    memory.ooms.fetch_add(1, std::memory_order_relaxed);
    TORCH_CHECK_WITH(
        OutOfMemoryError, false,
        "neuron out of memory. Tried to allocate ", gib(bytes), " on neuron:", static_cast<int>(index), " (",
        gib(capacity), " total capacity; ", gib(allocated - bytes), " already allocated). ",
        "Reduce the batch size, sequence length or model size, or raise HF_NEURON_EMULATOR_MEMORY_GB.");
  }
  memory.allocations.fetch_add(1, std::memory_order_relaxed);
  int64_t peak = memory.peak.load(std::memory_order_relaxed);
  while (allocated > peak && !memory.peak.compare_exchange_weak(peak, allocated, std::memory_order_relaxed)) {
  }
}

void unaccount(c10::DeviceIndex index, size_t nbytes) {
  auto& memory = g_memory[index];
  memory.allocated.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  memory.frees.fetch_add(1, std::memory_order_relaxed);
}

// Device memory: host memory in a CPU storage (the storage of a CPU kernel's result that the device adopted, or one
// allocated for the device), with the device index and size it was accounted under.
struct Adopted {
  c10::Storage cpu;
  c10::DeviceIndex index;
  size_t nbytes;
};

void release_adopted(void* context) {
  auto* adopted = static_cast<Adopted*>(context);
  unaccount(adopted->index, adopted->nbytes);
  delete adopted;
}

// A c10::DeviceAllocator, so that torch.accelerator's memory functions (memory_allocated, memory_stats,
// reset_peak_memory_stats, empty_cache, get_memory_info) work on neuron, as TorchNeuron 2.34's do. Nothing is cached:
// what is reserved is what is allocated, and there is nothing to empty or to record a stream for.
struct NeuronAllocator final : c10::DeviceAllocator {
  bool initialized() override {
    return true;
  }
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {}
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    const MemoryStats raw = memory_stats(device);
    c10::CachingDeviceAllocator::DeviceStats stats;
    constexpr auto all = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    for (auto* bytes : {&stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes, &stats.requested_bytes}) {
      (*bytes)[all].current = raw.allocated;
      (*bytes)[all].peak = raw.peak;
    }
    stats.allocation[all].current = raw.allocations - raw.frees;
    stats.allocation[all].allocated = raw.allocations;
    stats.allocation[all].freed = raw.frees;
    stats.num_ooms = raw.ooms;
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex /*device*/) override {}
  void resetPeakStats(c10::DeviceIndex device) override {
    reset_peak(device);
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    return memory_info(device);
  }

  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex index = current_device();
    check_not_forked();
    mark_initialized();
    account(index, nbytes);
    void* data = nullptr;
    if (nbytes > 0) {
      try {
        data = c10::alloc_cpu(nbytes);
      } catch (...) {
        unaccount(index, nbytes);
        throw;
      }
    }
    c10::Storage cpu(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes, c10::DataPtr(data, data, &c10::free_cpu, c10::Device(c10::kCPU)),
        /*allocator=*/nullptr, /*resizable=*/false));
    return {data, new Adopted{std::move(cpu), index, nbytes}, &release_adopted, c10::Device(kNeuron, index)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return nullptr;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
NeuronAllocator g_device_allocator;

// ---- pinned host memory ------------------------------------------------------------------------
std::mutex g_pinned_mutex;
std::map<uintptr_t, size_t> g_pinned;  // start -> size

void free_pinned(void* data) {
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned.erase(reinterpret_cast<uintptr_t>(data));
  }
  c10::free_cpu(data);
}

struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes > 0 ? c10::alloc_cpu(nbytes) : nullptr;
    if (data != nullptr) {
      std::lock_guard<std::mutex> lock(g_pinned_mutex);
      g_pinned[reinterpret_cast<uintptr_t>(data)] = nbytes;
    }
    return {data, data, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
PinnedAllocator g_pinned_allocator;

// ---- device guard: devices, streams, events ----------------------------------------------------
HF_NEURON_THREAD_LOCAL std::array<c10::StreamId, kMaxDevices> tls_stream{};
std::atomic<c10::StreamId> g_next_stream{1};

struct Event {
  std::chrono::steady_clock::time_point time;
};

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kNeuron;
  }
  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (previous.index() != device.index()) {
      setDevice(device);
    }
    return previous;
  }
  c10::Device getDevice() const override {
    return {kNeuron, current_device()};
  }
  void setDevice(c10::Device device) const override {
    set_current_device(device.index());
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0 && device.index() < g_settings.device_count) {
      tls_device = device.index();
    }
  }
  c10::Stream getStream(c10::Device device) const override {
    const auto index = check_index(device.index());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNeuron, index), tls_stream[index]);
  }
  c10::Stream getNewStream(c10::Device device, int /*priority*/) const override {
    const auto index = check_index(device.index());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNeuron, index), g_next_stream.fetch_add(1));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool /*high_priority*/) const override {
    return getNewStream(device, 0);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    const auto index = check_index(stream.device_index());
    c10::Stream previous{c10::Stream::UNSAFE, stream.device(), tls_stream[index]};
    tls_stream[index] = stream.id();
    return previous;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return g_settings.device_count;
  }
  // Execution is synchronous: a stream is always idle and an event is complete once recorded.
  void record(void** event, const c10::Stream& /*stream*/, const c10::DeviceIndex /*index*/,
              const c10::EventFlag /*flag*/) const override {
    if (*event == nullptr) {
      *event = new Event();
    }
    static_cast<Event*>(*event)->time = std::chrono::steady_clock::now();
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*index*/) const noexcept override {
    delete static_cast<Event*>(event);
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override {
    return true;
  }
  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*index*/) const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*index*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before measuring elapsed time.");
    const auto delta = static_cast<Event*>(end)->time - static_cast<Event*>(start)->time;
    return std::chrono::duration<double, std::milli>(delta).count();
  }
};

// ---- generators --------------------------------------------------------------------------------
// A device generator draws from a CPU generator, which is what the CPU kernels accept.
struct NeuronGenerator final : c10::GeneratorImpl {
  NeuronGenerator(c10::DeviceIndex index, uint64_t seed)
      : c10::GeneratorImpl(c10::Device(kNeuron, index), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        cpu(at::make_generator<at::CPUGeneratorImpl>(seed)) {}
  void set_current_seed(uint64_t seed) override {
    cpu.set_current_seed(seed);
  }
  void set_offset(uint64_t offset) override {
    cpu.set_offset(offset);
  }
  uint64_t get_offset() const override {
    return cpu.get_offset();
  }
  uint64_t current_seed() const override {
    return cpu.current_seed();
  }
  uint64_t seed() override {
    return cpu.seed();
  }
  void set_state(const c10::TensorImpl& state) override {
    cpu.unsafeGetGeneratorImpl()->set_state(state);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    return cpu.unsafeGetGeneratorImpl()->get_state();
  }
  NeuronGenerator* clone_impl() const override {
    auto* copy = new NeuronGenerator(device().index(), 0);
    copy->cpu = cpu.clone();
    return copy;
  }
  static c10::DeviceType device_type() {
    return kNeuron;
  }

  at::Generator cpu;
};

std::once_flag g_generators_once;
std::vector<at::Generator> g_default_generators;

// ---- hooks -------------------------------------------------------------------------------------
struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return g_settings.device_count > 0;
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return new_generator(index);
  }
  at::Device getDeviceFromPtr(void* /*data*/) const override {
    return {kNeuron, current_device()};
  }
  bool isPinnedPtr(const void* data) const override {
    return is_pinned(data);
  }
  at::Allocator* getPinnedMemoryAllocator() const override {
    return pinned_allocator();
  }
  bool hasPrimaryContext(c10::DeviceIndex /*index*/) const override {
    return g_initialized.load();
  }
  void init() const override {
    check_not_forked();
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    reallocate_storage(storage.unsafeGetStorageImpl(), nbytes);
  }
  c10::DeviceIndex deviceCount() const override {
    return g_settings.device_count;
  }
  void setCurrentDevice(c10::DeviceIndex index) const override {
    set_current_device(index);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    const auto previous = current_device();
    set_current_device(index);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
    return exchangeDevice(index);
  }
};

// ---- operator log ------------------------------------------------------------------------------
std::mutex g_op_mutex;
// The boxed fallback's entries, keyed by the address of the operator's name (stable while it is registered, so
// dropped when the log is cleared), and those of our own kernels, keyed by the address of their name (a string
// literal or a static string: kept for good, so that a call site may look its entry up once, `logged_op`).
std::unordered_map<const void*, LoggedOp> g_ops;
std::unordered_map<const char*, LoggedOp> g_named;
std::unordered_set<std::string> g_native;
std::unordered_set<std::string> g_unlogged;
std::unordered_set<std::string> g_measured_fallback;
bool g_measured = false;
HF_NEURON_THREAD_LOCAL int tls_kernel_depth = 0;

bool falls_back_on_trainium(const std::string& name) {
  if (g_measured) {
    return g_measured_fallback.count(name) > 0;
  }
  return g_native.count(name) == 0 && g_unlogged.count(name) == 0;
}

// Whether the calls `entry` counts fall back on Trainium (complex calls do unless the operator is never logged).
bool falls_back(const LoggedOp& entry) {
  return entry.complex_calls ? g_unlogged.count(entry.name) == 0 : falls_back_on_trainium(entry.name);
}

// Under g_op_mutex: the entry of `key` in `entries`, made (named `name_of()`) if it has none.
template <typename Key, typename NameOf>
LoggedOp& entry_of(std::unordered_map<Key, LoggedOp>& entries, Key key, const NameOf& name_of,
                   bool complex_calls = false) {
  auto [found, made] = entries.try_emplace(key);
  LoggedOp& entry = found->second;
  if (made) {
    entry.name = name_of();
    entry.complex_calls = complex_calls;
    entry.fallback = falls_back(entry);
  }
  return entry;
}

// Under g_op_mutex: the log emptied (the fallback's entries dropped, our own kernels' kept with no calls).
void clear_calls() {
  g_ops.clear();
  for (auto& [name, entry] : g_named) {
    entry.calls = 0;
  }
}

// Whether a call of our own kernels is logged: the log is on and the call is not another kernel's own work.
bool logs_own_kernels() {
  return g_settings.op_log && tls_kernel_depth == 0;
}

// Counts one call of `entry`; the first since the log was cleared of an operator that falls back warns, if asked to.
void count(LoggedOp& entry) {
  if (entry.calls.fetch_add(1, std::memory_order_relaxed) == 0 && entry.fallback && g_settings.warn_fallback) {
    c10::warn(c10::Warning(
        c10::UserWarning(), {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
        "Operator '" + entry.name + "' would fall back to CPU on Trainium (hf-neuron reference device)",
        /*verbatim=*/true));
  }
}

struct Registration {
  Registration() {
    pthread_atfork(nullptr, nullptr, &on_fork_child);
    at::RegisterPrivateUse1HooksInterface(new Hooks());
    c10::SetAllocator(kNeuron, &g_device_allocator);
  }
};
Registration g_registration;

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

Settings& settings() {
  return g_settings;
}

void configure(const Settings& s, const TrainiumOps& ops) {
  TORCH_CHECK(s.device_count >= 1 && s.device_count <= kMaxDevices, "device count must be 1..", kMaxDevices);
  g_settings = s;
  std::lock_guard<std::mutex> lock(g_op_mutex);
  g_native = {ops.native.begin(), ops.native.end()};
  g_unlogged = {ops.unlogged.begin(), ops.unlogged.end()};
  g_measured_fallback = {ops.measured_fallback.begin(), ops.measured_fallback.end()};
  g_measured = ops.measured;
  clear_calls();
  for (auto& [name, entry] : g_named) {
    entry.fallback = falls_back(entry);
  }
}

bool native_on_trainium(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_op_mutex);
  return g_native.count(name) > 0;
}

void set_default_device(c10::DeviceIndex index) {
  g_default_device = check_index(index);
}

c10::DeviceIndex device_count() {
  return g_settings.device_count;
}

c10::DeviceIndex current_device() {
  return tls_device >= 0 ? tls_device : g_default_device;
}

void set_current_device(c10::DeviceIndex index) {
  check_not_forked();
  tls_device = check_index(index);
  mark_initialized();
}

c10::DeviceIndex check_index(c10::DeviceIndex index) {
  if (index < 0) {
    return current_device();
  }
  TORCH_CHECK_VALUE(
      index < g_settings.device_count, "Invalid device neuron:", static_cast<int>(index), ": this process has ",
      static_cast<int>(g_settings.device_count), " neuron device(s), neuron:0 to neuron:",
      static_cast<int>(g_settings.device_count - 1),
      " (set HF_NEURON_EMULATOR_DEVICES for more reference devices).");
  return index;
}

void check_not_forked() {
  TORCH_CHECK(
      !g_bad_fork.load(),
      "Cannot re-initialize neuron in forked subprocess. To use neuron with multiprocessing, "
      "you must use the 'spawn' start method");
}

bool in_bad_fork() {
  return g_bad_fork.load();
}

bool initialized() {
  return g_initialized.load();
}

c10::Allocator* device_allocator() {
  return &g_device_allocator;
}

c10::Allocator* pinned_allocator() {
  return &g_pinned_allocator;
}

bool is_pinned(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  auto it = g_pinned.upper_bound(address);
  if (it == g_pinned.begin()) {
    return false;
  }
  --it;
  return address < it->first + it->second;
}

// The device storage of an adopted CPU storage (a CPU kernel's result, adopted on every operator the device runs): the
// storage and what its memory is accounted under in one allocation, where the device allocator's memory takes two
// (the storage, and `Adopted` as its data's context). Its data's context is the storage itself; a storage whose data is
// replaced later (a resize) holds an `Adopted` from then on.
class AdoptedStorage final : public c10::StorageImpl {
 public:
  AdoptedStorage(const c10::Storage& cpu, c10::DeviceIndex index)
      : c10::StorageImpl(
            c10::StorageImpl::use_byte_size_t(), cpu.nbytes(),
            c10::DataPtr(const_cast<void*>(cpu.data()), this, &release, c10::Device(kNeuron, index)),
            &g_device_allocator, /*resizable=*/true),
        memory_{cpu, index, cpu.nbytes()} {}

  // Frees the memory while `memory_` is alive (StorageImpl's destructor would after it is gone).
  ~AdoptedStorage() override {
    release_resources();
  }

  static void release(void* context) {
    auto& memory = static_cast<AdoptedStorage*>(context)->memory_;
    unaccount(memory.index, memory.nbytes);
    memory.cpu = c10::Storage();
  }

  const Adopted& memory() const {
    return memory_;
  }

 private:
  Adopted memory_;
};

c10::Storage adopt_cpu_storage(const c10::Storage& cpu, c10::DeviceIndex index) {
  account(index, cpu.nbytes());
  return c10::Storage(c10::make_intrusive<AdoptedStorage>(cpu, index));
}

const c10::Storage& cpu_storage_of(const c10::Storage& device) {
  const c10::DataPtr& data_ptr = device.data_ptr();
  if (data_ptr.get_deleter() == &AdoptedStorage::release) {
    return static_cast<const AdoptedStorage*>(data_ptr.get_context())->memory().cpu;
  }
  TORCH_INTERNAL_ASSERT(
      data_ptr.get_deleter() == &release_adopted,
      "a neuron storage whose memory the reference device did not allocate or adopt");
  return static_cast<const Adopted*>(data_ptr.get_context())->cpu;
}

void reallocate_storage(c10::StorageImpl* storage, size_t nbytes) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceGuard guard(storage->device());
  c10::DataPtr fresh = g_device_allocator.allocate(nbytes);
  const size_t keep = std::min(nbytes, storage->nbytes());
  if (keep > 0) {
    std::memcpy(fresh.get(), storage->data(), keep);
  }
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(nbytes);
}

MemoryStats memory_stats(c10::DeviceIndex index) {
  const auto& memory = g_memory[check_index(index)];
  MemoryStats stats;
  stats.allocated = memory.allocated.load();
  stats.peak = memory.peak.load();
  stats.allocations = memory.allocations.load();
  stats.frees = memory.frees.load();
  stats.ooms = memory.ooms.load();
  return stats;
}

void reset_peak(c10::DeviceIndex index) {
  auto& memory = g_memory[check_index(index)];
  memory.peak.store(memory.allocated.load());
}

std::pair<size_t, size_t> memory_info(c10::DeviceIndex index) {
  const int64_t capacity = g_settings.capacity_bytes;
  if (capacity >= 0) {
    const int64_t allocated = g_memory[check_index(index)].allocated.load();
    return {static_cast<size_t>(std::max<int64_t>(0, capacity - allocated)), static_cast<size_t>(capacity)};
  }
  const auto total = static_cast<size_t>(sysconf(_SC_PAGE_SIZE)) * static_cast<size_t>(sysconf(_SC_PHYS_PAGES));
  size_t available = total;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    size_t kib = 0;
    std::string unit;
    if (key == "MemAvailable:" && meminfo >> kib) {
      available = kib * 1024;
      break;
    }
    std::getline(meminfo, unit);
  }
  return {available, total};
}

const at::Generator& default_generator(c10::DeviceIndex index) {
  std::call_once(g_generators_once, [] {
    for (c10::DeviceIndex i = 0; i < g_settings.device_count; ++i) {
      g_default_generators.push_back(at::make_generator<NeuronGenerator>(i, c10::default_rng_seed_val));
    }
  });
  return g_default_generators[check_index(index)];
}

at::Generator new_generator(c10::DeviceIndex index) {
  return at::make_generator<NeuronGenerator>(check_index(index), c10::default_rng_seed_val);
}

at::Generator cpu_generator_of(const at::Generator& generator) {
  return static_cast<NeuronGenerator*>(generator.unsafeGetGeneratorImpl())->cpu;
}

at::Generator generator_for(c10::DeviceIndex index) {
  return g_settings.rng_on_cpu ? at::detail::getDefaultCPUGenerator() : cpu_generator_of(default_generator(index));
}

void record_op(const c10::OperatorHandle& op, bool complex_inputs) {
  if (tls_kernel_depth > 0) {
    return;
  }
  const c10::OperatorName& name = op.operator_name();
  const auto name_of = [&name] { return c10::toString(name); };
  std::lock_guard<std::mutex> lock(g_op_mutex);
  // A second entry for the operator's complex calls, keyed one byte past its name (names are aligned).
  const void* key = complex_inputs ? static_cast<const void*>(reinterpret_cast<const char*>(&name) + 1) : &name;
  count(entry_of(g_ops, key, name_of, complex_inputs));
}

LoggedOp* logged_op(const char* name) {
  std::lock_guard<std::mutex> lock(g_op_mutex);
  return &entry_of(g_named, name, [name] { return std::string(name); });
}

void record(LoggedOp* op) {
  if (logs_own_kernels()) {
    count(*op);
  }
}

void record_named(const char* name) {
  if (logs_own_kernels()) {  // before the lookup, which takes the log's lock
    count(*logged_op(name));
  }
}

DeviceKernelScope::DeviceKernelScope(const char* name) {
  if (name != nullptr) {
    record_named(name);
  }
  ++tls_kernel_depth;
}

DeviceKernelScope::~DeviceKernelScope() {
  --tls_kernel_depth;
}

namespace {
std::unordered_map<std::string, int64_t> calls_where(bool only_fallbacks) {
  std::lock_guard<std::mutex> lock(g_op_mutex);
  std::unordered_map<std::string, int64_t> out;
  const auto add = [&](const LoggedOp& entry) {
    const int64_t calls = entry.calls.load(std::memory_order_relaxed);
    if (calls > 0 && (!only_fallbacks || entry.fallback)) {
      out[entry.name] += calls;
    }
  };
  for (const auto& [key, entry] : g_ops) {
    add(entry);
  }
  for (const auto& [name, entry] : g_named) {
    add(entry);
  }
  return out;
}
} // namespace

std::unordered_map<std::string, int64_t> executed_ops() {
  return calls_where(false);
}

std::unordered_map<std::string, int64_t> fallback_ops() {
  return calls_where(true);
}

void clear_op_log() {
  std::lock_guard<std::mutex> lock(g_op_mutex);
  clear_calls();
}

} // namespace hf_neuron
