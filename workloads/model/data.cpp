#include "workloads/model/data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace xdc::model {

std::vector<int32_t> encode_bytes(std::string_view text) {
  std::vector<int32_t> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) out[i] = static_cast<uint8_t>(text[i]);
  return out;
}

std::string decode_bytes(const std::vector<int32_t>& tokens) {
  std::string out(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) out[i] = char(uint8_t(tokens[i]));
  return out;
}

TextCorpus TextCorpus::load(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file(ec)) files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<uint8_t> all;
  TextCorpus c;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) continue;
    all.insert(all.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ++c.files_;
  }
  constexpr size_t kBlock = 4096;
  if (all.size() < 10 * kBlock) {
    std::string list;
    for (const auto& p : paths) list += (list.empty() ? "" : ", ") + p;
    throw std::runtime_error("corpus: expected at least 40 KiB of text in " + list + ", got " +
                             std::to_string(all.size()) + " bytes");
  }
  for (size_t off = 0, blk = 0; off < all.size(); off += kBlock, ++blk) {
    auto& dst = (blk % 10 == 9) ? c.val_ : c.train_;
    dst.insert(dst.end(), all.begin() + off, all.begin() + std::min(all.size(), off + kBlock));
  }
  return c;
}

BatchLoader::BatchLoader(const std::vector<uint8_t>& data, int batch, int seq, uint64_t seed)
    : data_(data), B_(batch), T_(seq), state_(seed * 0x9E3779B97F4A7C15ull + 1) {
  if (data.size() < size_t(seq) + 1) throw std::invalid_argument("corpus shorter than seq + 1");
}

void BatchLoader::window(size_t start, int32_t* tokens, int32_t* targets) const {
  for (int t = 0; t < T_; ++t) {
    tokens[t] = data_[start + t];
    targets[t] = data_[start + t + 1];
  }
}

void BatchLoader::next(int32_t* tokens, int32_t* targets) {
  const uint64_t range = data_.size() - T_ - 1;
  for (int b = 0; b < B_; ++b) {
    // xorshift64*: cheap, deterministic, good enough for window offsets
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    const uint64_t r = state_ * 0x2545F4914F6CDD1Dull;
    window(r % (range + 1), tokens + size_t(b) * T_, targets + size_t(b) * T_);
  }
}

void BatchLoader::fixed(int i, int count, int32_t* tokens, int32_t* targets) const {
  const size_t range = data_.size() - T_ - 1;
  for (int b = 0; b < B_; ++b) {
    const size_t k = size_t(i) * B_ + b, n = size_t(count) * B_;
    window(range * k / n, tokens + size_t(b) * T_, targets + size_t(b) * T_);
  }
}

}  // namespace xdc::model
