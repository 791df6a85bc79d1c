// replayer_floor: the least CPU a replayer built on nats.c spends on NATS per event, measured on
// this machine beside the replayer's own figure (bench/replayer-bench sink).
//
//   replayer_floor --count N [--guard false] [--js true]
//
// Drains N messages of WEB_EVENTS through the replayer's durable consumer doing only the NATS
// work every stored event needs, with the same calls and connections as the replayer: pull
// batches of 100 (PullConsumer::Fetch), one duplicate-guard record per event written to KV
// replayer_stored and waited for (AsyncPublisher on a coalescing sibling connection), then the
// ack on that connection. No parsing, no HTTP, no lanes, no visit state, no metrics. Prints
// "floor <events> <cpu µs per event> <events/s>": the process's CPU (user + system) divided by
// the events. An HTTP client's CPU per request (wrk's, measured by the same bench run) added to
// it is the least any replayer could spend per event here; what the replayer spends above the
// sum is its own. NATS_URL as for the services.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>

#include <nats/nats.h>
#include "common/config.h"
#include "common/nats_async.h"
#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/topology.h"

namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the NATS work per stored event, without the replayer's logic"};
  int count = 60000;
  app.add_option("--count", count, "messages to drain");
  bool guard = true;
  bool use_js = false;
  app.add_option("--js", use_js, "guard records by nats.c's js_PublishMsgAsync");
  app.add_option("--guard", guard, "write and wait for each event's guard record (as stored)");
  CLI11_PARSE(app, argc, argv);
  auto reader = common::ConfigReader::FromProcess();
  auto cc = common::ReadCommonConfig(reader, "127.0.0.1:0");
  reader.Finish();
  auto nats = common::NatsClient::Connect(cc, {});
  if (!nats) {
    std::cerr << nats.error().message << "\n";
    return 3;
  }
  common::NatsClient::Options o;
  o.client_name = "replayer_floor acks";
  o.send_asap = false;  // as the replayer's acks connection
  auto acks = (*nats)->Sibling(o);
  if (!acks) {
    std::cerr << acks.error().message << "\n";
    return 3;
  }
  // The replayer's consumer: a work-queue stream takes one consumer per subject.
  common::ConsumerSpec spec;
  spec.stream = common::topology::kWebEvents;
  spec.durable = "replayer";
  spec.filter_subject = std::string(common::topology::kWebEventsSubjectPrefix) + "*";
  spec.max_ack_pending = 1000;
  auto consumer = common::PullConsumer::Bind(**nats, spec);
  if (!consumer) {
    std::cerr << consumer.error().message << "\n";
    return 3;
  }
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0, failed = 0;
  struct Answers {
    std::mutex* mu;
    std::condition_variable* cv;
    int* answered;
    int* failed;
  } answers{&mu, &cv, &answered, &failed};
  auto publisher = common::AsyncPublisher::Create(**acks, [&](uint64_t, const common::Status& st) {
    std::lock_guard lock(mu);
    ++answered;
    if (!st) ++failed;
    cv.notify_one();
  });
  if (!publisher) {
    std::cerr << publisher.error().message << "\n";
    return 3;
  }
  // --js: the guard records through nats.c's own js_PublishMsgAsync, as AsyncPublisher did
  // before (common/nats_async.h says why it no longer does).
  jsCtx* js = nullptr;
  if (use_js) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.AckHandler = [](jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* c) {
      auto* l = static_cast<Answers*>(c);
      std::lock_guard lock(*l->mu);
      ++*l->answered;
      if (pa == nullptr || pae != nullptr) ++*l->failed;
      l->cv->notify_one();
      natsMsg_Destroy(msg);
    };
    jo.PublishAsync.AckHandlerClosure = &answers;
    if (natsConnection_JetStream(&js, (*acks)->conn(), &jo) != NATS_OK) {
      std::cerr << "JetStream context\n";
      return 3;
    }
  }
  const std::string guard_prefix =
      "$KV." + std::string(common::topology::kStoredIdsBucket) + ".floor-";
  int done = 0, empty_fetches = 0;
  double cpu0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  while (done < count && empty_fetches < 20) {
    auto batch = (*consumer)->Fetch(100, int64_t{64} << 20, common::Millis(500));
    if (!batch) {
      std::cerr << "fetch: " << batch.error().message << "\n";
      return 1;
    }
    auto& msgs = batch->messages;
    if (msgs.empty()) {
      ++empty_fetches;
      continue;
    }
    int sent = 0;
    for (auto& m : msgs) {
      if (!guard) break;
      common::OutMessage put;
      put.subject = guard_prefix + std::to_string(m.stream_seq());
      put.data = std::to_string(m.stream_seq());
      if (use_js) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = (*acks)->request_timeout_ms();
        if (js_PublishAsync(js, put.subject.c_str(), put.data.data(),
                            static_cast<int>(put.data.size()), &po) != NATS_OK) {
          std::cerr << "guard record: js_PublishAsync failed\n";
          return 1;
        }
      } else if (auto st = publisher.value()->Publish(put, m.stream_seq()); !st) {
        std::cerr << "guard record: " << st.error().message << "\n";
        return 1;
      }
      ++sent;
    }
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return answered >= sent; });
      answered -= sent;
    }
    for (auto& m : msgs) {
      if (auto st = m.AckOn(**acks); !st) {
        std::cerr << "ack: " << st.error().message << "\n";
        return 1;
      }
    }
    done += static_cast<int>(msgs.size());
  }
  if (auto st = (*acks)->Flush(5000); !st) std::cerr << "flush: " << st.error().message << "\n";
  if (js != nullptr) jsCtx_Destroy(js);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = CpuSeconds() - cpu0;
  if (failed > 0 || done == 0) {
    std::cerr << "drained " << done << ", guard records failed: " << failed << "\n";
    return 1;
  }
  std::cout << "floor " << done << " " << static_cast<int>(cpu * 1e6 / done + 0.5) << " "
            << static_cast<int>(done / secs + 0.5) << "\n";
  return 0;
}
