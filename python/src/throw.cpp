// The one C++ function of the extension: throws the exception that
// PyTorch's CUDAPluggableAllocator needs on a failed allocation.
//
// PyTorch stores whatever pointer its allocate function returns without a
// null check (a failed allocation would become a tensor at address 0 and
// the first kernel on it an illegal-address fault that poisons the CUDA
// context); it expects a C++ exception instead, which it turns into a
// Python RuntimeError carrying the message. rmm_rs_torch_allocate (ffi.rs)
// calls this after it has caught every panic and logged the failure.
#include <new>
#include <string>

namespace {

// A bad_alloc (what RMM's own PyTorch hook throws) that keeps the message.
class rmm_rs_bad_alloc : public std::bad_alloc {
 public:
  explicit rmm_rs_bad_alloc(const char* message) : message_(message ? message : "rmm_rs: allocation failed") {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace

extern "C" [[noreturn]] void rmm_rs_throw_bad_alloc(const char* message) { throw rmm_rs_bad_alloc(message); }
