// core/base/mapped_file: a file mapped or read into memory of its own, and how
// model.load_mode picks between them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/base/mapped_file.hpp"
#include "core/model/model_loader.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

fs::path write_temp(const std::string& name, const std::string& bytes) {
  const auto dir = fs::temp_directory_path() / "inflight_mapped_file_test";
  fs::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string text_of(const mapped_file& f) { return {reinterpret_cast<const char*>(f.bytes().data()), f.size()}; }

}  // namespace

TEST_CASE("a file mapped and a file read hold the same bytes, missing and empty files", "[core][mapped_file]") {
  std::string bytes(3 * 4096 + 17, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 31 + 7);
  const auto path = write_temp("data.bin", bytes);
  for (auto load : {file_load::map, file_load::read}) {
    INFO(to_string(load));
    auto f = mapped_file::try_open(path, load);
    REQUIRE(f.has_value());
    CHECK(text_of(*f) == bytes);
    auto missing = mapped_file::try_open(path.parent_path() / "no-such-file", load);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == errc::not_found);
    auto empty = mapped_file::try_open(write_temp("empty.bin", ""), load);
    REQUIRE(empty.has_value());
    CHECK(empty->size() == 0);
    auto folder = mapped_file::try_open(path.parent_path(), load);
    REQUIRE_FALSE(folder.has_value());
    CHECK(folder.error().code == errc::io_error);
  }
}

TEST_CASE("a file read is a copy: later writes to the file do not reach it", "[core][mapped_file]") {
  const auto path = write_temp("copy.bin", std::string(8192, 'a'));
  auto read = mapped_file::try_open(path, file_load::read);
  auto mapped = mapped_file::try_open(path, file_load::map);
  REQUIRE((read.has_value() && mapped.has_value()));
  {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out << std::string(8192, 'b');
  }
  CHECK(text_of(*read) == std::string(8192, 'a'));
  CHECK(text_of(*mapped) == std::string(8192, 'b'));  // a private mapping sees pages it has not written
}

TEST_CASE("model.load_mode: read and mmap as set, auto reads for the cpu backend when the files fit",
          "[core][mapped_file][model_loader]") {
  const auto path = write_temp("weights.gguf", std::string(1000, 'x'));
  model_settings s;
  s.path = path.string();
  s.load_mode = "read";
  CHECK(resolve_load_mode(s, "cuda", 0) == file_load::read);
  s.load_mode = "mmap";
  CHECK(resolve_load_mode(s, "cpu", 1ull << 40) == file_load::map);
  s.load_mode = "auto";
  CHECK(resolve_load_mode(s, "cpu", 1ull << 40) == file_load::read);
  CHECK(resolve_load_mode(s, "cpu", 1333) == file_load::map);  // 1000 > 3/4 of 1333
  CHECK(resolve_load_mode(s, "cpu", 1336) == file_load::read);
  CHECK(resolve_load_mode(s, "cpu", 0) == file_load::map);     // available memory unknown
  CHECK(resolve_load_mode(s, "cuda", 1ull << 40) == file_load::map);
  // A folder counts its safetensors files.
  const auto folder = path.parent_path() / "hf-folder";
  fs::create_directories(folder);
  std::ofstream(folder / "model-00001.safetensors", std::ios::binary) << std::string(600, 'y');
  std::ofstream(folder / "model-00002.safetensors", std::ios::binary) << std::string(600, 'y');
  std::ofstream(folder / "tokenizer.json", std::ios::binary) << std::string(5000, 'z');
  s.path = folder.string();
  CHECK(resolve_load_mode(s, "cpu", 1600) == file_load::read);  // 1200 <= 1200
  CHECK(resolve_load_mode(s, "cpu", 1596) == file_load::map);
}
