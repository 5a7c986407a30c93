#include "core/base/text_file.hpp"

#include <fstream>
#include <sstream>

namespace inflight {

result<std::string> read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const errc code = std::filesystem::exists(path) ? errc::io_error : errc::not_found;
    return make_error(code, "cannot open '" + path.string() + "'");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(errc::io_error, "cannot read '" + path.string() + "'");
  return text.str();
}

}  // namespace inflight
