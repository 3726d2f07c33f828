// common/private_dir.h: directories 0700 and files 0600 whatever the umask; an existing
// directory is tightened only when asked, never one above the one named.
#include "common/private_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;

namespace {

mode_t mode_of(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

struct UmaskScope {
  explicit UmaskScope(mode_t m) : was(umask(m)) {}
  ~UmaskScope() { umask(was); }
  mode_t was;
};

class PrivateDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xdc-private-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::permissions(root_, fs::perms(0755));
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(PrivateDir, CreatesEveryMissingLevel0700WhateverTheUmask) {
  for (mode_t u : {mode_t{0}, mode_t{022}, mode_t{0777}}) {
    const UmaskScope scope(u);
    const fs::path d = root_ / ("u" + std::to_string(u)) / "a" / "b";
    xdc::make_private_dir(d.string());
    EXPECT_EQ(mode_of(d.parent_path().parent_path()), 0700u) << "umask " << u;
    EXPECT_EQ(mode_of(d.parent_path()), 0700u) << "umask " << u;
    EXPECT_EQ(mode_of(d), 0700u) << "umask " << u;
  }
  EXPECT_EQ(mode_of(root_), 0755u);  // there already: left as it was
}

TEST_F(PrivateDir, TightensAnExistingDirectoryOnlyWhenAsked) {
  const fs::path d = root_ / "state";
  fs::create_directory(d);
  fs::permissions(d, fs::perms(0755));
  xdc::make_private_dir(d.string());
  EXPECT_EQ(mode_of(d), 0755u);
  xdc::make_private_dir(d.string(), true);
  EXPECT_EQ(mode_of(d), 0700u);
  EXPECT_EQ(mode_of(root_), 0755u);
}

TEST_F(PrivateDir, RefusesAFileWhereTheDirectoryShouldBe) {
  std::ofstream(root_ / "f") << "x";
  EXPECT_THROW(xdc::make_private_dir((root_ / "f").string()), std::system_error);
  EXPECT_THROW(xdc::make_private_dir((root_ / "f" / "g").string()), std::system_error);
}

TEST_F(PrivateDir, WritesAFile0600FromTheStart) {
  const UmaskScope scope(0);
  const fs::path f = root_ / "state.json";
  std::ofstream(f.string() + ".tmp") << "stale";  // a temporary left by a killed writer
  fs::permissions(f.string() + ".tmp", fs::perms(0666));
  xdc::write_private_file(f.string(), "{}\n");
  EXPECT_EQ(mode_of(f), 0600u);
  EXPECT_FALSE(fs::exists(f.string() + ".tmp"));
  std::ifstream in(f);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "{}\n");
  EXPECT_THROW(xdc::write_private_file((root_ / "no" / "x").string(), ""), std::system_error);
}

}  // namespace
