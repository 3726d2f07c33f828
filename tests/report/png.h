#pragma once
// Just enough PNG for a test to judge a screenshot: the size from IHDR, and (with zlib)
// the pixels of an 8-bit RGB/RGBA non-interlaced image, which is what Chromium writes.
#include <cstdint>
#include <string>
#include <vector>

namespace xdc::testing {

struct Png {
  int width = 0, height = 0;
  int channels = 0;             // 3 or 4; 0 when the pixels were not decoded
  std::vector<uint8_t> pixels;  // row-major, `channels` bytes per pixel
  std::string error;            // why the pixels are not there
};

Png read_png(const std::string& path);

}  // namespace xdc::testing
