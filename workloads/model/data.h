#pragma once
// Training data: a byte-level tokenizer (token = byte, vocab 256) and a loader over any
// text files. The default corpus is /usr/share/common-licenses/* (present on every Debian
// system), so training never downloads anything. The train/validation split is
// deterministic: every 10th block of 4 KiB of the concatenated files is validation.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xdc::model {

inline constexpr const char* kDefaultCorpus = "/usr/share/common-licenses";

std::vector<int32_t> encode_bytes(std::string_view text);
std::string decode_bytes(const std::vector<int32_t>& tokens);

class TextCorpus {
 public:
  // Files, or directories whose regular files are read (sorted by path, not recursive).
  // Throws std::runtime_error if nothing readable is found.
  static TextCorpus load(const std::vector<std::string>& paths);
  static TextCorpus load_default() { return load({kDefaultCorpus}); }

  const std::vector<uint8_t>& train() const { return train_; }
  const std::vector<uint8_t>& validation() const { return val_; }
  size_t files() const { return files_; }

 private:
  std::vector<uint8_t> train_, val_;
  size_t files_ = 0;
};

// Batches of B windows of T+1 bytes: tokens = window[0..T), targets = window[1..T].
class BatchLoader {
 public:
  // Random windows drawn from a seeded stream (training).
  BatchLoader(const std::vector<uint8_t>& data, int batch, int seq, uint64_t seed);
  // Fills tokens and targets, each (B,T).
  void next(int32_t* tokens, int32_t* targets);
  // The i-th of a fixed, evenly spaced set of windows (validation): same every run.
  void fixed(int i, int count, int32_t* tokens, int32_t* targets) const;

 private:
  void window(size_t start, int32_t* tokens, int32_t* targets) const;
  const std::vector<uint8_t>& data_;
  int B_, T_;
  uint64_t state_;
};

}  // namespace xdc::model
