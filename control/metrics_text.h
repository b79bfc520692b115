// Prometheus text exposition (format 0.0.4) of twinlane's counters, pulled through DaemonApi:
// status, stats(ports), stats(classes), stats(queues). Served over HTTP by MetricsServer and
// testable without a socket.
//
// Families (all prefixed twinlane_, each with HELP and TYPE):
//   twinlane_up, twinlane_uptime_seconds, twinlane_policy_epoch, twinlane_scrape_error{section}
//   twinlane_port_{rx,tx}_{packets,bytes,dropped}_total{port}, twinlane_port_{rx,tx}_bits_per_second
//   twinlane_class_classified_{packets,bytes}_total{class}, twinlane_class_malformed_drops_total
//   twinlane_{class,queue}_{packets,bytes}_{in,out}_total, twinlane_{class,queue}_drops_total{reason},
//   twinlane_{class,queue}_drop_bytes_total{reason}, twinlane_{class,queue}_ecn_marks_total{marker},
//   twinlane_{class,queue}_depth_{packets,bytes}      (queue labels: port, node, kind)
//   twinlane_class_sojourn_seconds histogram: bucket le = (2^i - 1) ns for the sched log2
//   histogram's bucket i (exact: bucket i holds integer ns below 2^i), _sum, _count.
// Pure function of what the API returns; thread-safety is the API's.
#pragma once

#include <string>

#include "control/daemon_api.h"

namespace twinlane::control {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string prometheus_text(DaemonApi& api);

}  // namespace twinlane::control
