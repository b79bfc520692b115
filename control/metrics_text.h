// Prometheus text exposition (format 0.0.4) of twinlane's counters, pulled through DaemonApi:
// status, stats(ports), stats(classes), stats(queues). Served over HTTP by MetricsServer and
// testable without a socket.
//
// Names follow node_exporter: ports as its netdev collector (receive/transmit, _total
// counters), scheduler queues as its qdisc collector (packets, bytes, drops, overlimits,
// backlog), units in the name. Every series is listed in control/README.md ("Metrics"); in short
// (all prefixed twinlane_, each family with HELP and TYPE):
//   build_info{version}, up, uptime_seconds, scrape_error{section}
//   policy_epoch, policy_applied_epoch, policy_changes_total{change,result},
//   policy_last_load_successful, policy_reloads_total, policy_reload_failures_total
//   port_{up,speed_bits_per_second,policy_rate_bits_per_second}{port}
//   port_{receive,transmit}_{packets,bytes,drops}_total{port},
//   port_{receive,transmit}_bits_per_second{port}
//   port_pfc_{pause_frames,paused_seconds}_total{port,priority,direction},
//   port_pfc_storms_total{port,priority}, port_pfc_lossless_backlog_bytes{port,priority}
//   class_classified_{packets,bytes}_total{class}, class_malformed_drops_total{class}
//   {class,queue}_{enqueued_packets,enqueued_bytes,packets,bytes,overlimits}_total,
//   {class,queue}_drops_total{reason}, {class,queue}_dropped_bytes_total{reason},
//   {class,queue}_ecn_marks_total{marker}, {class,queue}_backlog_{packets,bytes}
//     (class series: {class}, summed over the egress ports; queue series: {port,queue,kind}
//      plus {class} on the node where the class enters the tree: its leaf or per_job node)
//   class_sojourn_seconds histogram: bucket le = (2^i - 1) ns for the sched log2 histogram's
//   bucket i (exact: bucket i holds integer ns below 2^i; the last only under +Inf), _sum, _count
//   class_pipeline_latency_seconds histogram (same buckets), class_pipeline_latency_max_seconds
//     {class}: RX -> tx_burst through the realtime pipeline, where the daemon keeps it
//   lcore_busy_pass_seconds histogram (same buckets), lcore_busy_pass_max_seconds,
//   lcore_poll_gap_max_seconds,
//   lcore_{run,runqueue_wait}_seconds_total, lcore_preemptions_total{lcore,role}: the
//     forwarding lcores' loops and the CPU other threads took from them (status's lcores)
// A field the API does not return is not exported (no placeholder zeros), except counters
// inside a returned object. Pure function of what the API returns; thread-safety is the API's.
#pragma once

#include <string>

#include "control/daemon_api.h"

namespace twinlane::control {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string prometheus_text(DaemonApi& api);

}  // namespace twinlane::control
