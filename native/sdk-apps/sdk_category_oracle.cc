// Asks Perfetto's C++ SDK itself which track event categories a TrackEventConfig enables,
// so that ffmtrace's CategorySelection is checked against the SDK's own decision
// (perfetto::internal::TrackEventInternal::IsCategoryEnabled) rather than against a
// reading of it. scripts/category-oracle feeds it cases and writes the golden table
// track-event's CategorySelectionTest reads.
//
// Input, one record a line, fields separated by '|', list items by ';':
//   declare|NAME|TAGS                       a category of the registry (groups look their
//                                           members up in it; others count as dynamic)
//   case|ENABLED_CATEGORIES|DISABLED_CATEGORIES|ENABLED_TAGS|DISABLED_TAGS|NAME|TAGS
// A NAME with a comma is a group (Category::Group). Output: each case line, then '|' and
// 1 if the SDK enables the category for that config, else 0.
//
// Built by ../shared/tools/build-perfetto-sdk-app.sh (not by native/Makefile):
//   build-perfetto-sdk-app.sh /tmp/perfetto-ref native/sdk-apps/sdk_category_oracle.cc -o BIN

#include "perfetto/tracing/internal/track_event_internal.h"
#include "perfetto/tracing/track_event_category_registry.h"
#include "protos/perfetto/config/track_event/track_event_config.gen.h"

#include <atomic>
#include <cstdio>
#include <deque>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  if (text.empty())
    return parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos)
      return parts;
    start = end + 1;
  }
}

// Category keeps pointers to its strings: they live here for the whole run.
std::deque<std::string> g_strings;

const char* Keep(const std::string& s) {
  g_strings.push_back(s);
  return g_strings.back().c_str();
}

perfetto::Category MakeCategory(const std::string& name, const std::string& tag_list) {
  const char* n = Keep(name);
  perfetto::Category base = name.find(',') == std::string::npos ? perfetto::Category(n)
                                                                : perfetto::Category::Group(n);
  std::vector<const char*> tags;
  for (const std::string& tag : Split(tag_list, ';'))
    tags.push_back(Keep(tag));
  switch (tags.size()) {
    case 0:
      return base;
    case 1:
      return base.SetTags(tags[0]);
    case 2:
      return base.SetTags(tags[0], tags[1]);
    case 3:
      return base.SetTags(tags[0], tags[1], tags[2]);
    default:
      return base.SetTags(tags[0], tags[1], tags[2], tags[3]);
  }
}

}  // namespace

int main() {
  std::vector<perfetto::Category> declared;
  std::vector<std::string> cases;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> fields = Split(line, '|');
    if (fields.size() == 3 && fields[0] == "declare") {
      declared.push_back(MakeCategory(fields[1], fields[2]));
    } else if (fields.size() == 7 && fields[0] == "case") {
      cases.push_back(line);
    } else if (!line.empty()) {
      std::fprintf(stderr, "bad line: %s\n", line.c_str());
      return 2;
    }
  }
  std::vector<std::atomic<uint8_t>> state(declared.size() + 1);
  perfetto::internal::TrackEventCategoryRegistry registry(declared.size(), declared.data(), state.data());
  for (const std::string& c : cases) {
    std::vector<std::string> fields = Split(c, '|');
    perfetto::protos::gen::TrackEventConfig config;
    for (const std::string& s : Split(fields[1], ';'))
      config.add_enabled_categories(s);
    for (const std::string& s : Split(fields[2], ';'))
      config.add_disabled_categories(s);
    for (const std::string& s : Split(fields[3], ';'))
      config.add_enabled_tags(s);
    for (const std::string& s : Split(fields[4], ';'))
      config.add_disabled_tags(s);
    perfetto::Category category = MakeCategory(fields[5], fields[6]);
    bool enabled = perfetto::internal::TrackEventInternal::IsCategoryEnabled(registry, config, category);
    std::printf("%s|%d\n", c.c_str(), enabled ? 1 : 0);
  }
  return 0;
}
