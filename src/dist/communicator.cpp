// gpusort::dist communicators: wrapping the caller's, all GPUs of this process, or one
// process per GPU from a launcher's environment.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <unistd.h>

#include "dist_common.hpp"

namespace gpusort::dist {

namespace {

// NVLink multicast (NVLS) can take shared GPUs out of service: off unless the caller chose.
void keep_multicast_off() { setenv("NCCL_NVLS_ENABLE", "0", 0); }

const char* first_env(std::initializer_list<const char*> names, const char** which = nullptr) {
  for (const char* name : names) {
    if (const char* v = std::getenv(name); v && *v) {
      if (which) *which = name;
      return v;
    }
  }
  return nullptr;
}

int env_int(std::initializer_list<const char*> names, int fallback, const char* what) {
  const char* which = nullptr;
  const char* v = first_env(names, &which);
  if (!v) {
    if (fallback >= 0) return fallback;
    throw gpusort::error(cudaErrorInvalidValue,
                         std::string("gpusort::dist::communicator_from_environment: no ") + what +
                             " (set GPUSORT_RANK and GPUSORT_WORLD_SIZE, or run under a launcher)");
  }
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20)
    throw gpusort::error(cudaErrorInvalidValue,
                         std::string("gpusort::dist::communicator_from_environment: ") + which +
                             "=" + v + " is not a rank number");
  return static_cast<int>(x);
}

std::string to_hex(const ncclUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

bool from_hex(const std::string& hex, ncclUniqueId& id) {
  if (hex.size() != 2 * sizeof(id.internal)) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < sizeof(id.internal); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    id.internal[i] = static_cast<char>(hi * 16 + lo);
  }
  return true;
}

// Rank 0 writes the id to a temporary file and renames it, so a reader never sees half of it;
// the others poll for it.
ncclUniqueId id_through_file(const std::string& path, int rank) {
  const std::string call = "gpusort::dist::communicator_from_environment: GPUSORT_NCCL_ID_FILE=" + path;
  ncclUniqueId id{};
  if (rank == 0) {
    detail::check_nccl(ncclGetUniqueId(&id), call);
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(tmp);
      out << to_hex(id) << "\n";
      if (!out.flush())
        throw gpusort::error(cudaErrorInvalidValue, call + ": cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw gpusort::error(cudaErrorInvalidValue, call + ": cannot rename " + tmp);
    return id;
  }
  const char* timeout_env = std::getenv("GPUSORT_NCCL_ID_TIMEOUT");
  const double timeout_s = timeout_env ? std::atof(timeout_env) : 120.0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (true) {
    std::ifstream in(path);
    std::string hex;
    if (in >> hex) {
      if (!from_hex(hex, id))
        throw gpusort::error(cudaErrorInvalidValue, call + ": the file holds no NCCL id");
      return id;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw gpusort::error(cudaErrorTimeout, call + ": rank 0 wrote no id within " +
                                                 std::to_string(timeout_s) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

communicator::communicator(ncclComm_t comm, bool owned) : comm_(comm), owned_(owned) {
  const std::string call = "gpusort::dist::communicator";
  detail::check_nccl(ncclCommUserRank(comm, &rank_), call + ": ncclCommUserRank");
  detail::check_nccl(ncclCommCount(comm, &size_), call + ": ncclCommCount");
  detail::check_nccl(ncclCommCuDevice(comm, &device_), call + ": ncclCommCuDevice");
}

communicator::communicator(std::shared_ptr<detail::thread_group> group, int rank, int size,
                           int device)
    : group_(std::move(group)), rank_(rank), size_(size), device_(device) {}

communicator communicator::wrap(ncclComm_t comm) { return communicator(comm, false); }

communicator::communicator(communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)), owned_(std::exchange(other.owned_, false)),
      group_(std::move(other.group_)), rank_(other.rank_), size_(other.size_), device_(other.device_) {}

communicator& communicator::operator=(communicator&& other) noexcept {
  if (this != &other) {
    if (owned_ && comm_) ncclCommDestroy(comm_);
    comm_ = std::exchange(other.comm_, nullptr);
    owned_ = std::exchange(other.owned_, false);
    group_ = std::move(other.group_);
    rank_ = other.rank_;
    size_ = other.size_;
    device_ = other.device_;
  }
  return *this;
}

communicator::~communicator() {
  if (owned_ && comm_) ncclCommDestroy(comm_);
}

std::vector<communicator> communicators_for_devices(std::span<const int> devices) {
  keep_multicast_off();
  std::vector<int> list(devices.begin(), devices.end());
  if (list.empty()) {
    int count = 0;
    detail::check_cuda(cudaGetDeviceCount(&count), "gpusort::dist: cudaGetDeviceCount");
    for (int d = 0; d < count; ++d) list.push_back(d);
  }
  for (std::size_t i = 0; i < list.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (list[i] == list[j])
        throw gpusort::error(cudaErrorInvalidDevice,
                             "gpusort::dist::communicators_for_devices: device " +
                                 std::to_string(list[i]) +
                                 " is listed twice (one rank per GPU; for several ranks on one "
                                 "GPU, communicators_on_one_device)");
  std::vector<ncclComm_t> comms(list.size());
  detail::check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(list.size()), list.data()),
                     "gpusort::dist::communicators_for_devices: ncclCommInitAll");
  std::vector<communicator> out;
  for (ncclComm_t c : comms) out.push_back(communicator(c, true));
  // Threads of this process on their own GPUs: a peer group for options::copy_engines.
  if (const auto group = detail::peer_group(list))
    for (communicator& c : out) c.group_ = group;
  return out;
}

std::vector<communicator> communicators_on_one_device(int ranks, int device) {
  if (ranks < 1)
    throw gpusort::error(cudaErrorInvalidValue, "gpusort::dist::communicators_on_one_device: " +
                                                    std::to_string(ranks) + " ranks");
  auto group = std::make_shared<detail::thread_group>(ranks);
  std::vector<communicator> out;
  for (int r = 0; r < ranks; ++r) out.push_back(communicator(group, r, ranks, device));
  return out;
}

communicator communicator_from_environment() {
  keep_multicast_off();
  const int rank = env_int({"GPUSORT_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, -1,
                           "rank");
  const int size = env_int({"GPUSORT_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                            "SLURM_NTASKS"}, -1, "world size");
  const int local = env_int({"GPUSORT_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "SLURM_LOCALID"}, rank, "local rank");
  if (rank >= size)
    throw gpusort::error(cudaErrorInvalidValue,
                         "gpusort::dist::communicator_from_environment: rank " +
                             std::to_string(rank) + " of a world of " + std::to_string(size));
  int devices = 0;
  detail::check_cuda(cudaGetDeviceCount(&devices), "gpusort::dist: cudaGetDeviceCount");
  detail::check_cuda(cudaSetDevice(local % devices), "gpusort::dist: cudaSetDevice");
  ncclUniqueId id{};
  if (const char* hex = std::getenv("GPUSORT_NCCL_ID"); hex && *hex) {
    if (!from_hex(hex, id))
      throw gpusort::error(cudaErrorInvalidValue,
                           "gpusort::dist::communicator_from_environment: GPUSORT_NCCL_ID is not "
                           "an id from gpusort::dist::make_unique_id");
  } else if (const char* path = std::getenv("GPUSORT_NCCL_ID_FILE"); path && *path) {
    id = id_through_file(path, rank);
  } else {
    throw gpusort::error(cudaErrorInvalidValue,
                         "gpusort::dist::communicator_from_environment: set GPUSORT_NCCL_ID or "
                         "GPUSORT_NCCL_ID_FILE");
  }
  ncclComm_t comm = nullptr;
  detail::check_nccl(ncclCommInitRank(&comm, size, id, rank),
                     "gpusort::dist::communicator_from_environment: ncclCommInitRank");
  return communicator(comm, true);
}

communicator communicator_for_rank(const std::string& unique_id, int rank, int size, int device) {
  keep_multicast_off();
  const std::string call = "gpusort::dist::communicator_for_rank";
  if (size < 1 || rank < 0 || rank >= size)
    throw gpusort::error(cudaErrorInvalidValue, call + ": rank " + std::to_string(rank) +
                                                    " of a world of " + std::to_string(size));
  ncclUniqueId id{};
  if (!from_hex(unique_id, id))
    throw gpusort::error(cudaErrorInvalidValue,
                         call + ": the id is not one of gpusort::dist::make_unique_id");
  detail::check_cuda(cudaSetDevice(device), call + ": cudaSetDevice");
  ncclComm_t comm = nullptr;
  detail::check_nccl(ncclCommInitRank(&comm, size, id, rank), call + ": ncclCommInitRank");
  return communicator(comm, true);
}

std::string make_unique_id() {
  ncclUniqueId id{};
  detail::check_nccl(ncclGetUniqueId(&id), "gpusort::dist::make_unique_id");
  return to_hex(id);
}

}  // namespace gpusort::dist
