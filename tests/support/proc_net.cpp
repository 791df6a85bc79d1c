#include "tests/support/proc_net.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace testsupport {

namespace {

// The inodes of the sockets among pid's descriptors ("socket:[<inode>]" links).
bool SocketInodes(pid_t pid, std::set<std::string>* inodes) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  while (const dirent* e = readdir(d)) {
    char target[64];
    const std::string link = dir + "/" + e->d_name;
    ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    std::string t(target, static_cast<size_t>(n));
    if (t.rfind("socket:[", 0) == 0 && t.back() == ']') inodes->insert(t.substr(8, t.size() - 9));
  }
  closedir(d);
  return true;
}

// The port of a "0100007F:1F90" address (hex).
int PortOf(const std::string& address) {
  size_t colon = address.find(':');
  if (colon == std::string::npos) return -1;
  try {
    return std::stoi(address.substr(colon + 1), nullptr, 16);
  } catch (...) {
    return -1;
  }
}

}  // namespace

int EstablishedSockets(pid_t pid, int port, bool local) {
  std::set<std::string> inodes;
  if (!SocketInodes(pid, &inodes)) return -1;
  std::ifstream tcp("/proc/" + std::to_string(pid) + "/net/tcp");
  if (!tcp) return -1;
  std::string line;
  std::getline(tcp, line);  // the header
  int count = 0;
  while (std::getline(tcp, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::istringstream in(line);
    std::string sl, local_address, rem_address, st, queues, timer, retr, uid, timeout, inode;
    if (!(in >> sl >> local_address >> rem_address >> st >> queues >> timer >> retr >> uid >>
          timeout >> inode)) {
      continue;
    }
    if (st != "01") continue;  // TCP_ESTABLISHED
    if (PortOf(local ? local_address : rem_address) != port) continue;
    if (inodes.count(inode) != 0) ++count;
  }
  return count;
}

}  // namespace testsupport
