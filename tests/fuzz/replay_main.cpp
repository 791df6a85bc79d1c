// main() for a fuzz target outside libFuzzer: feeds it every file of the directories (or files)
// named on the command line, so the plain and sanitizer builds rerun the corpus kept in the
// repository (tests/fuzz/corpus/<target>) as a unit test. Prints how many inputs ran; exits 1 when
// a directory is missing or empty (a test that ran nothing must not pass).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    if (std::filesystem::is_directory(argv[i], ec)) {
      for (const auto& e : std::filesystem::directory_iterator(argv[i], ec)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (std::filesystem::is_regular_file(argv[i], ec)) {
      files.emplace_back(argv[i]);
    }
    if (files.empty()) {
      std::fprintf(stderr, "no input in %s\n", argv[i]);
      return 1;
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  std::printf("%zu inputs ran without a failure\n", ran);
  return ran > 0 ? 0 : 1;
}
