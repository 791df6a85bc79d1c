#include "common/service_cli.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <iostream>

namespace common {

bool DisableCoreDumps() {
  const rlimit none{0, 0};
  const bool limited = setrlimit(RLIMIT_CORE, &none) == 0;
  const bool undumpable = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
  return limited && undumpable;
}

std::string VariablesHelp(const std::function<void(ConfigReader&)>& read_config) {
  ConfigReader names({});
  if (read_config) read_config(names);
  std::string text =
      "Configuration comes from the environment only; README.md (Configuration) says what each "
      "variable means. Read here, with their defaults:\n";
  for (const auto& [name, fallback] : names.variables()) {
    std::string line = "  " + name;
    if (!fallback.empty())
      line += std::string(line.size() < 40 ? 40 - line.size() : 1, ' ') + fallback;
    text += line + "\n";
  }
  return text;
}

std::optional<int> HandleServiceArguments(int argc, char** argv, const ServiceUsage& usage,
                                          const std::string& version) {
  if (argc <= 1) return std::nullopt;
  std::string footer = VariablesHelp(usage.read_config) + usage.exit_codes;
  CLI::App app{usage.description, usage.name};
  app.set_version_flag("--version", usage.name + " " + version);
  app.footer(footer);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e, std::cout, std::cerr);
    return rc == 0 ? 0 : 2;
  }
  return std::nullopt;  // only reached with arguments CLI11 accepts and we do not have: none
}

}  // namespace common
