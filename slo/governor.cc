#include "slo/governor.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace twinlane::slo {
namespace {

std::string rate_text(uint64_t bps) {
    char text[32];
    if (bps >= 1'000'000'000) {
        std::snprintf(text, sizeof text, "%.2fG", static_cast<double>(bps) / 1e9);
    } else {
        std::snprintf(text, sizeof text, "%.1fM", static_cast<double>(bps) / 1e6);
    }
    return text;
}

std::string us_text(uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1fus", static_cast<double>(ns) / 1e3);
    return text;
}

constexpr uint64_t kIdleWindowsSeen = 64;

// Moved packets count in the class they moved to: their lane bits (a PFC tag stays).
sched::Scheduler::UserStamp lane_stamp(uint8_t lane) {
    return {admission::pack_user(lane, 0), admission::pack_user(0x0F, 0)};
}

ControllerSpec controller_spec(const SloClassSpec& s, const SloTreeSpec& tree) {
    ControllerSpec c;
    c.window_ns = s.window_ns;
    c.target_ns = s.has_latency ? s.target_ns : 0;
    c.adapt_cap = s.adapt_cap;
    c.cap_min_bps = s.cap_min_bps;
    c.cap_max_bps = s.cap_max_bps;
    c.downgrade = s.downgrade;
    c.quiet_windows =
        static_cast<uint32_t>(std::max<uint64_t>(1, (s.quiet_ns + s.window_ns - 1) / s.window_ns));
    c.max_frame_bytes = tree.max_frame_bytes;
    c.blocking_ns = tree.blocking_ns();
    return c;
}

}  // namespace

const char* to_string(EventKind kind) {
    switch (kind) {
        case EventKind::missed:
            return "missed";
        case EventKind::met_again:
            return "met_again";
        case EventKind::cap:
            return "cap";
        case EventKind::downgrade:
            return "downgrade";
        case EventKind::restore:
            return "restore";
    }
    return "missed";
}

std::vector<std::string> targets_within_blocking(const SloTreeSpec& tree) {
    std::vector<std::string> notes;
    const uint64_t blocking = tree.blocking_ns();
    for (const SloClassSpec& c : tree.classes) {
        if (!c.has_latency || c.target_ns > blocking) continue;
        notes.push_back(c.class_name + ": the " + to_string(c.percentile) + " target " +
                        us_text(c.target_ns) + " is not above one " +
                        std::to_string(tree.max_frame_bytes) + "-byte frame at " +
                        rate_text(tree.link_bps) + "bit/s (" + us_text(blocking) +
                        "): a packet that arrives behind such a frame of another class waits "
                        "longer whatever the class's actions; its windows may miss the "
                        "target, and the controller acts only on the delay beyond it");
    }
    return notes;
}

std::string describe(const SloEvent& e, const SloClassSpec& spec) {
    const std::string target =
        std::string(to_string(spec.percentile)) + " target " + us_text(spec.target_ns);
    std::string why;
    switch (e.reason) {
        case Reason::missed_cap_binding:
            why = "window " + std::string(to_string(spec.percentile)) + " " +
                  us_text(e.percentile_ns) + " > " + us_text(spec.target_ns) +
                  " with the cap binding";
            break;
        case Reason::pressure:
            why = std::string(e.kind == EventKind::downgrade ? "queueing delay up to "
                                                             : "queueing delay ") +
                  us_text(e.percentile_ns) + " > " +
                  us_text(
                      static_cast<uint64_t>(static_cast<double>(spec.target_ns) * kGuardFraction)) +
                  ", half the " + target +
                  (e.kind == EventKind::downgrade ? ", the class arriving above its cap" : "");
            break;
        case Reason::missed_at_max:
            why = "window " + std::string(to_string(spec.percentile)) + " " +
                  us_text(e.percentile_ns) + " > " + us_text(spec.target_ns) +
                  " with the cap at its max";
            break;
        case Reason::met_quiet:
            why = "met for the quiet period, room in the cap";
            break;
        case Reason::comfortable:
            why = "window " + std::string(to_string(spec.percentile)) + " " +
                  us_text(e.percentile_ns) + " <= half the " + target;
            break;
        case Reason::none:
            break;
    }
    std::string line = spec.class_name + ": ";
    switch (e.kind) {
        case EventKind::missed:
            line += "SLO missed: window " + std::string(to_string(spec.percentile)) + " " +
                    us_text(e.percentile_ns) + " > " + target;
            return line;
        case EventKind::met_again:
            line += "SLO met again: window " + std::string(to_string(spec.percentile)) + " " +
                    us_text(e.percentile_ns) + " <= " + target;
            return line;
        case EventKind::cap:
            line += "cap " + rate_text(e.old_cap_bps) + " -> " + rate_text(e.new_cap_bps);
            break;
        case EventKind::downgrade:
            line += "downgraded " + std::to_string(e.flows) + " flow(s) (" +
                    std::to_string(e.bytes) + " B in the window) to " + spec.downgrade_class_name +
                    ", " + std::to_string(e.downgraded_flows) + " down now";
            break;
        case EventKind::restore:
            line += "returned " + std::to_string(e.flows) + " flow(s) from " +
                    spec.downgrade_class_name;
            if (e.deferred != 0)
                line += " (" + std::to_string(e.deferred) +
                        " silent, once their packets queued there have left)";
            line += ", " + std::to_string(e.downgraded_flows) + " down now";
            break;
    }
    return line + " (" + why + ")";
}

SloGovernor::SloGovernor(const SloTreeSpec& spec, uint32_t lane_count, GovernorOptions options)
    : spec_(spec), options_(options), lane_count_(lane_count) {
    class_of_lane_.fill(-1);
    for (size_t i = 0; i < spec_.classes.size(); ++i) {
        const SloClassSpec& s = spec_.classes[i];
        auto c = std::make_unique<ClassState>(s, controller_spec(s, spec_));
        c->lane = admission::lane_of(s.class_id, lane_count_);
        c->index = static_cast<uint8_t>(i);
        c->quantile_ppm = quantile_ppm(s.percentile);
        // Long enough to average a few bursts (RPC responses arrive at line rate), short
        // enough to follow a surge within a window: measured in replay, half the target let
        // pressure ratchet flows down on single bursts, twice the target settled in 5 ms.
        c->tick_ns = std::max<uint64_t>(1'000, s.has_latency ? 2 * s.target_ns : s.window_ns / 20);
        if (c->lane < kLanes) class_of_lane_[c->lane] = static_cast<int8_t>(i);
        if (s.downgrade && s.acts()) {
            const uint8_t to = admission::lane_of(s.downgrade_class, lane_count_);
            if (to < kLanes) downgraders_[to] |= 1u << i;
        }
        classes_.push_back(std::move(c));
    }
}

SloGovernor::~SloGovernor() {
    if (held_ == nullptr) return;
    for (const auto& c : classes_)
        for (uint32_t i = 0; i < c->override_count; ++i)
            held_->release(c->overrides[i].flow_hash);
}

std::optional<std::string> SloGovernor::bind(sched::Scheduler* scheduler,
                                             admission::LeafMap* leaves) {
    scheduler_ = nullptr;
    leaves_ = nullptr;
    for (auto& c : classes_)
        c->acting = false;
    if (scheduler == nullptr || leaves == nullptr) return std::nullopt;
    const sched::TreeSpec& tree = scheduler->spec();
    for (auto& cp : classes_) {
        ClassState& c = *cp;
        if (c.lane >= leaves->class_count())
            return "class '" + c.spec.class_name + "' does not enter the tree";
        const admission::ClassLeaves& entry = leaves->class_leaves(c.lane);
        c.first_leaf = entry.first_leaf;
        c.leaf_count = entry.leaf_count;
        if (c.spec.downgrade && c.spec.downgrade_class >= leaves->class_count())
            return "class '" + c.spec.downgrade_class_name + "' does not enter the tree";
        const std::optional<uint32_t> node = scheduler->node_id(c.spec.cap_node);
        if (!node) return "node '" + c.spec.cap_node + "' is not in the tree";
        c.cap_node = *node;
        // The lowest shaper on the path above the class's node: the link at most.
        uint64_t path_min = spec_.link_bps;
        for (std::string parent = tree.nodes[*node].parent; !parent.empty();) {
            const std::optional<uint32_t> id = scheduler->node_id(parent);
            if (!id) break;
            const uint64_t rate = tree.nodes[*id].shaper.rate_bits_per_sec;
            if (rate != 0 && (path_min == 0 || rate < path_min)) path_min = rate;
            parent = tree.nodes[*id].parent;
        }
        c.path_min_bps = path_min;
        const uint64_t own = tree.nodes[*node].shaper.rate_bits_per_sec;
        if (c.spec.adapt_cap && own == 0)
            return "node '" + c.spec.cap_node + "' has no shaper to adapt";
        c.controller.reset_cap(own != 0 ? own : path_min);
        if (c.spec.adapt_cap && c.controller.cap_bps() != own) {
            // A policy rate outside [min, max] is refused by conf; clamp all the same.
            scheduler->set_shaper_rate(*node, c.controller.cap_bps(), 0);
        }
        c.acting = c.spec.acts() && c.spec.has_latency;
    }
    scheduler_ = scheduler;
    leaves_ = leaves;
    for (auto& cp : classes_) {
        ClassState& c = *cp;
        const uint64_t cap = c.controller.cap_bps();
        c.service_bps = c.path_min_bps == 0 ? cap : std::min(cap, c.path_min_bps);
        if (c.service_bps == 0) c.service_bps = spec_.link_bps;
        c.guard_bytes = c.spec.has_latency && c.service_bps != 0
                            ? static_cast<uint64_t>(static_cast<double>(c.controller.guard_ns()) *
                                                    static_cast<double>(c.service_bps) / 8e9)
                            : UINT64_MAX;
        c.live.cap_bps.set(c.spec.adapt_cap ? cap : 0);
        c.live.cap_floor_bps.set(c.controller.cap_floor_bps());
    }
    return std::nullopt;
}

bool SloGovernor::insert_override(ClassState& c, uint32_t flow_hash, uint32_t job) {
    if (c.override_count >= kMaxDowngradedFlows) return false;
    const uint32_t at = override_slot(c, flow_hash);
    if (c.override_slots[at].index != 0) return false;  // already down
    c.overrides[c.override_count] = Override{.flow_hash = flow_hash, .job = job};
    c.override_slots[at] = OverrideSlot{.flow_hash = flow_hash, .index = ++c.override_count};
    if (held_ != nullptr) held_->hold(flow_hash);
    return true;
}

bool SloGovernor::erase_override(ClassState& c, uint32_t flow_hash) {
    const uint32_t at = override_slot(c, flow_hash);
    const uint32_t index = c.override_slots[at].index;
    if (index == 0) return false;
    const uint32_t hole = classifier::erase_slot(
        at, kOverrideSlots - 1, [&](uint32_t s) { return c.override_slots[s].index != 0; },
        [&](uint32_t s) { return override_home(c.override_slots[s].flow_hash); },
        [&](uint32_t from, uint32_t to) { c.override_slots[to] = c.override_slots[from]; });
    c.override_slots[hole] = OverrideSlot{};
    // The last flow fills the removed one's place, and its slot follows.
    const uint32_t last = --c.override_count;
    if (index - 1 != last) {
        c.overrides[index - 1] = c.overrides[last];
        c.override_slots[override_slot(c, c.overrides[last].flow_hash)].index = index;
    }
    c.overrides[last] = Override{};
    if (held_ != nullptr) held_->release(flow_hash);
    return true;
}

void SloGovernor::left_lower_class(uint8_t lane, uint32_t flow_hash) {
    for (uint32_t mask = downgraders_[lane]; mask != 0; mask &= mask - 1) {
        ClassState& c = *classes_[static_cast<size_t>(std::countr_zero(mask))];
        if (Override* o = find_override(c, flow_hash); o != nullptr && o->queued != 0) {
            if (--o->queued == 0 && o->returning) {
                // Its return was decided; the last of its packets below has left.
                erase_override(c, flow_hash);
                c.live.returns.add(1);
                c.live.downgraded_flows.set(c.override_count);
            }
            return;
        }
    }
}

void SloGovernor::record_departure(int8_t index, uint64_t latency_ns, uint32_t bytes,
                                   uint32_t flow_hash, uint64_t now_ns) {
    ClassState& c = *classes_[static_cast<size_t>(index)];
    c.histogram.record(latency_ns);
    ++c.packets;
    c.bytes_out += bytes;
    c.max_ns = std::max(c.max_ns, latency_ns);
    if (c.spec.has_latency) {
        if (latency_ns > c.spec.target_ns) {
            ++c.over_target;
        } else {
            c.max_within_target_ns = std::max(c.max_within_target_ns, latency_ns);
        }
    }
    if (c.acting && latency_ns > c.controller.departure_guard_ns()) [[unlikely]] {
        FlowLoad flow{flow_hash, 0, 0};
        // The flow's job and bytes so far from the meter (its arrivals were counted there).
        flow.bytes = c.meter.bytes_of(flow_hash);
        flow.job = c.meter.job_of(flow_hash);
        press(c, latency_ns, true, flow, now_ns);
    }
}

void SloGovernor::press(ClassState& c, uint64_t delay_ns, bool measured, const FlowLoad& flow,
                        uint64_t now_ns) {
    c.live.pressure_events.add(1);
    roll_tick(c, now_ns);
    Pressure p;
    p.delay_ns = delay_ns;
    p.measured = measured;
    p.flow = flow;
    p.mean_flow_bytes = c.meter.mean_flow_bytes();
    p.arrival_bps = kept_arrival_bps(c, now_ns);
    p.service_bps = c.service_bps;
    p.flow_downgraded = find_override(c, flow.flow_hash) != nullptr;
    p.room = c.override_count < kMaxDowngradedFlows;
    const Decision d = c.controller.on_pressure(p);
    // The event reports the delay the controller judged: the class's own part.
    if (!d.empty()) apply(c, d, now_ns, c.window_start_ns, c.controller.own_delay_ns(p));
}

void SloGovernor::set_cap(ClassState& c, uint64_t cap_bps, uint64_t now_ns) {
    scheduler_->set_shaper_rate(c.cap_node, cap_bps, now_ns);
    c.service_bps = c.path_min_bps == 0 ? cap_bps : std::min(cap_bps, c.path_min_bps);
    c.guard_bytes = static_cast<uint64_t>(static_cast<double>(c.controller.guard_ns()) *
                                          static_cast<double>(c.service_bps) / 8e9);
    c.live.cap_bps.set(cap_bps);
    c.live.cap_changes.add(1);
}

uint64_t SloGovernor::downgrade_flow(ClassState& c, const FlowLoad& flow) {
    if (!insert_override(c, flow.flow_hash, flow.job)) return 0;
    const uint8_t to = c.spec.downgrade_class;
    const sched::MoveResult moved = scheduler_->move_flow(
        leaves_->where(c.lane, flow.job), leaves_->place(to, flow.job, *scheduler_), flow.flow_hash,
        lane_stamp(to), drop_handler_ != nullptr ? drop_scratch_.data() : nullptr,
        drop_handler_ != nullptr ? static_cast<uint32_t>(drop_scratch_.size()) : 0);
    find_override(c, flow.flow_hash)->queued += moved.packets;
    // Moved first (they are the lower class's now), then dropped there.
    record_move(c.spec.class_id, to, moved.packets + moved.dropped,
                moved.bytes + moved.dropped_bytes);
    if (moved.dropped != 0) drop_handler_->dropped(drop_scratch_.data(), moved.dropped);
    // What it sent lately no longer stays: the recent arrival rate forgets it.
    c.removed_tick_bytes += c.meter.recent_bytes(flow.flow_hash, c.tick);
    c.bytes_in_gone += c.meter.bytes_of(flow.flow_hash);
    c.live.downgrades.add(1);
    c.live.downgraded_flows.set(c.override_count);
    c.live.downgraded_packets.add(moved.packets + moved.dropped);
    c.live.downgraded_bytes.add(moved.bytes + moved.dropped_bytes);
    c.downgraded_bytes += moved.bytes + moved.dropped_bytes;
    return flow.bytes;
}

// A flow with nothing queued below returns at once: its next packet goes to the class's own
// leaf and nothing can overtake anything. One with packets still below (close_window offers
// only silent ones) returns when the last of them has left (left_lower_class); until then
// its packets keep going below, behind them. Returns whether it returned now.
bool SloGovernor::restore_flow(ClassState& c, const FlowLoad& flow) {
    Override* o = find_override(c, flow.flow_hash);
    if (o == nullptr) return false;
    if (o->queued != 0) {
        o->returning = true;
        return false;
    }
    erase_override(c, flow.flow_hash);
    c.live.returns.add(1);
    c.live.downgraded_flows.set(c.override_count);
    return true;
}

void SloGovernor::apply(ClassState& c, const Decision& d, uint64_t now_ns, uint64_t window_start_ns,
                        uint64_t percentile_ns) {
    SloEvent e;
    e.time_ns = now_ns;
    e.window_start_ns = window_start_ns;
    e.percentile_ns = percentile_ns;
    e.class_index = c.index;
    if (d.cap_bps) {
        e.kind = EventKind::cap;
        e.reason = d.cap_reason;
        e.old_cap_bps = c.live.cap_bps.read();
        e.new_cap_bps = *d.cap_bps;
        set_cap(c, *d.cap_bps, now_ns);
        emit(e);
    }
    e.old_cap_bps = e.new_cap_bps = c.live.cap_bps.read();
    e.reason = d.flows_reason;
    if (d.downgrade.count != 0) {
        e.kind = EventKind::downgrade;
        e.flows = 0;
        e.bytes = 0;
        for (const FlowLoad& f : d.downgrade.view()) {
            if (find_override(c, f.flow_hash) != nullptr) continue;
            if (c.override_count >= kMaxDowngradedFlows) break;
            e.bytes += downgrade_flow(c, f);
            ++e.flows;
        }
        e.downgraded_flows = c.override_count;
        if (e.flows != 0 && d.flows_reason == Reason::pressure) {
            // Pressure downgrades one flow per packet: one event per window says them all.
            if (c.pressed.flows == 0)
                c.pressed = e;
            else
                c.pressed.flows += e.flows, c.pressed.bytes += e.bytes;
            c.pressed.percentile_ns = std::max(c.pressed.percentile_ns, e.percentile_ns);
            c.pressed.downgraded_flows = e.downgraded_flows;
            c.pressed.time_ns = now_ns;
        } else if (e.flows != 0) {
            emit(e);
        }
    }
    if (d.restore.count != 0) {
        e.kind = EventKind::restore;
        e.flows = 0;
        e.bytes = 0;
        for (const FlowLoad& f : d.restore.view()) {
            e.bytes += f.bytes;
            ++e.flows;
            if (!restore_flow(c, f)) ++e.deferred;
        }
        e.downgraded_flows = c.override_count;
        emit(e);
    }
}

void SloGovernor::emit(const SloEvent& e) {
    events_.push(e);
    if (options_.keep_events) kept_events_.push_back(e);
}

void SloGovernor::close_windows(uint64_t now_ns) {
    if (!started_) {
        // Windows are aligned to multiples of their length; the first is the one `now` is in.
        started_ = true;
        for (auto& cp : classes_) {
            ClassState& c = *cp;
            c.window_start_ns = now_ns - now_ns % c.spec.window_ns;
            c.window_end_ns = c.window_start_ns + c.spec.window_ns;
            c.meter.start_window();
        }
    }
    uint64_t next = UINT64_MAX;
    for (auto& cp : classes_) {
        ClassState& c = *cp;
        while (now_ns >= c.window_end_ns) {
            const uint64_t end = c.window_end_ns;
            close_window(c, end);
            // A long pause: past kIdleWindowsSeen empty windows the rest are idle, counted at
            // once (the controller has seen enough of them to settle).
            if (now_ns >= c.window_end_ns + kIdleWindowsSeen * c.spec.window_ns && c.packets == 0) {
                const uint64_t skipped = (now_ns - c.window_end_ns) / c.spec.window_ns;
                c.live.windows_idle.add(skipped);
                c.window_start_ns += skipped * c.spec.window_ns;
                c.window_end_ns += skipped * c.spec.window_ns;
                c.meter.start_window();
            }
        }
        next = std::min(next, c.window_end_ns);
    }
    next_deadline_ns_ = next;
}

void SloGovernor::finish(uint64_t now_ns) {
    close_windows(now_ns);
    for (auto& cp : classes_) {
        ClassState& c = *cp;
        if (c.packets != 0) close_window(c, now_ns);
        if (c.pressed.flows != 0) {
            emit(c.pressed);
            c.pressed.flows = 0;
        }
    }
}

void SloGovernor::close_window(ClassState& c, uint64_t end_ns) {
    if (c.pressed.flows != 0) {
        emit(c.pressed);
        c.pressed.flows = 0;
    }
    WindowMeasurement m;
    m.idle = c.packets == 0;
    m.percentile_ns = m.idle ? 0 : c.histogram.percentile_ns(c.quantile_ppm);
    m.met = m.idle || !c.spec.has_latency ||
            c.packets - c.over_target >= LatencyHistogram::rank_of(c.packets, c.quantile_ppm);
    // The bucket's upper edge bounds the percentile from above; when it was met, so does the
    // largest latency within the target (exact), which keeps the figure on the right side of
    // the target.
    if (!m.idle && c.spec.has_latency && m.met)
        m.percentile_ns = std::min(m.percentile_ns, c.max_within_target_ns);
    m.bytes_out = c.bytes_out;
    // What stays: arrivals of flows downgraded within the window no longer count.
    m.bytes_in = c.bytes_in > c.bytes_in_gone ? c.bytes_in - c.bytes_in_gone : 0;
    m.backlog_bytes = scheduler_ != nullptr ? queued_bytes(c) : 0;
    m.queue_pressed = c.queue_pressed;
    m.service_bps = c.service_bps;
    const uint32_t heavy = c.meter.heaviest(
        std::span<FlowLoad>(c.heaviest),
        [&](uint32_t flow_hash) { return find_override(c, flow_hash) == nullptr; });
    m.heaviest = std::span<const FlowLoad>(c.heaviest.data(), heavy);
    uint32_t down = 0;
    uint32_t active = 0;
    uint64_t active_bytes = 0;
    uint64_t downgraded_load = 0;
    uint64_t returning_load = 0;
    if (c.override_count != 0) {
        const uint32_t quiet = c.controller.spec().quiet_windows;
        for (uint32_t i = 0; i < c.override_count; ++i) {
            Override& o = c.overrides[i];
            const uint64_t bytes = c.meter.bytes_of(o.flow_hash);
            if (bytes != 0) ++active;
            active_bytes += bytes;
            // Its load: what it sent per window while down (at least this window's bytes),
            // 0 once it has stopped: silent for the quiet period and for twice its mean gap
            // between windows it sent in (a flow that sends an RPC every 3 ms is silent in
            // half the 2 ms periods without having stopped).
            o.bytes_down += bytes;
            o.windows_down += o.windows_down != UINT32_MAX ? 1 : 0;
            o.active_windows += bytes != 0 && o.active_windows != UINT32_MAX ? 1 : 0;
            o.silent_windows = bytes != 0 ? 0 : std::min(o.silent_windows + 1, UINT32_MAX - 1);
            // Up to its last active window: the silence now is what is being judged.
            const uint64_t gap =
                o.active_windows == 0 ? 0 : (o.windows_down - o.silent_windows) / o.active_windows;
            const bool stopped = o.silent_windows >= std::max<uint64_t>(quiet, 2 * gap);
            // Offered for return with that load; one with packets still below returns when
            // they have left.
            const uint64_t load =
                stopped ? 0 : std::max(bytes, o.bytes_down / std::max(1u, o.windows_down));
            if (o.returning) {
                returning_load += load;  // decided: its load is the class's already
                continue;
            }
            downgraded_load += load;
            if (down != c.downgraded.size()) c.downgraded[down++] = {o.flow_hash, o.job, load};
        }
    }
    m.downgraded_active = active;
    m.downgraded_bytes = active_bytes;
    m.downgraded_load = downgraded_load;
    m.returning_load = returning_load;
    m.downgraded = std::span<const FlowLoad>(c.downgraded.data(), down);
    m.downgraded_count = c.override_count;

    // Attainment.
    LiveSloCounters& live = c.live;
    int8_t share_met = -1;
    if (c.spec.min_share_ppm != 0) {
        const double floor = static_cast<double>(spec_.link_bps) *
                             static_cast<double>(c.spec.window_ns) / 8e9 *
                             static_cast<double>(c.spec.min_share_ppm) / 1e6;
        const double offered = static_cast<double>(c.bytes_in + c.backlog_at_start);
        // Judged when the class asked for at least one frame; met within 5% of what it was
        // owed (the floor, or all it offered when that was less).
        if (offered >= spec_.max_frame_bytes) {
            share_met = static_cast<double>(c.bytes_out) >= 0.95 * std::min(floor, offered) ? 1 : 0;
            (share_met == 1 ? live.share_windows_met : live.share_windows_missed).add(1);
        }
    }
    // A floor-only SLO is judged on its floor; windows where it was not asked for are idle.
    const bool judged = c.spec.has_latency ? !m.idle : share_met >= 0;
    const bool met = c.spec.has_latency ? m.met : share_met == 1;
    if (!judged) {
        live.windows_idle.add(1);
    } else {
        (met ? live.windows_met : live.windows_missed).add(1);
        live.last_window_start_ns.set(c.window_start_ns);
        live.last_percentile_ns.set(m.percentile_ns);
        live.last_packets.set(c.packets);
        live.last_met.set(met ? 1 : 0);
        if (!c.have_worst || m.percentile_ns > live.worst_percentile_ns.read()) {
            c.have_worst = true;
            live.worst_percentile_ns.set(m.percentile_ns);
            live.worst_window_start_ns.set(c.window_start_ns);
        }
        if (c.spec.has_latency && m.met != c.was_met) {
            SloEvent e;
            e.time_ns = end_ns;
            e.window_start_ns = c.window_start_ns;
            e.percentile_ns = m.percentile_ns;
            e.class_index = c.index;
            e.kind = m.met ? EventKind::met_again : EventKind::missed;
            e.old_cap_bps = e.new_cap_bps = live.cap_bps.read();
            e.downgraded_flows = c.override_count;
            emit(e);
            c.was_met = m.met;
        }
    }
    if (c.acting) {
        const Decision d = c.controller.on_window(m);
        if (!d.empty()) apply(c, d, end_ns, c.window_start_ns, m.percentile_ns);
        live.cap_floor_bps.set(c.controller.cap_floor_bps());
    }
    if (options_.keep_windows) {
        WindowRecord r;
        r.start_ns = c.window_start_ns;
        r.packets = c.packets;
        r.percentile_ns = m.percentile_ns;
        r.max_ns = c.max_ns;
        r.bytes_out = c.bytes_out;
        r.bytes_in = m.bytes_in;
        r.downgraded_bytes = c.downgraded_bytes;
        r.cap_bps = live.cap_bps.read();
        r.downgraded_flows = c.override_count;
        r.idle = !judged;
        r.met = met;
        r.share_met = share_met;
        c.windows.push_back(r);
    }
    // The next window.
    c.histogram.clear();
    c.packets = c.over_target = c.max_ns = c.max_within_target_ns = 0;
    c.bytes_out = c.bytes_in = c.bytes_in_gone = c.downgraded_bytes = 0;
    c.queue_pressed = false;
    c.backlog_at_start = m.backlog_bytes;
    c.meter.start_window();
    c.window_start_ns = end_ns;
    c.window_end_ns = end_ns + c.spec.window_ns;
}

uint32_t SloGovernor::follow_reclassification(uint8_t old_lane, uint32_t old_job, uint8_t lane,
                                              uint32_t job, uint32_t flow_hash) {
    // Where a flow of lane `l` is queued: the lower class's leaf when its class downgraded it.
    struct Place {
        uint16_t leaf;
        uint8_t cls;
        Override* below;  // the override that put it there, if any
    };
    // Where its packets are (`placing`: where its next packet goes).
    const auto where = [&](uint8_t l, uint32_t j, bool placing) -> Place {
        const auto leaf = [&](uint8_t cls, uint32_t jb) {
            return placing ? leaves_->place(cls, jb, *scheduler_) : leaves_->where(cls, jb);
        };
        if (governs(l)) {
            ClassState& c = *classes_[static_cast<size_t>(class_of_lane_[l])];
            if (Override* o = find_override(c, flow_hash))
                return {leaf(c.spec.downgrade_class, o->job), c.spec.downgrade_class, o};
        }
        return {leaf(l, j), l, nullptr};
    };
    const Place from = where(old_lane, old_job, false);
    const Place to = where(lane, job, true);
    const sched::MoveResult moved =
        scheduler_->move_flow(from.leaf, to.leaf, flow_hash, lane_stamp(to.cls));
    if (from.below != nullptr && from.below != to.below) from.below->queued = 0;
    if (to.below != nullptr && from.below != to.below) to.below->queued += moved.packets;
    if (from.cls != to.cls) record_move(from.cls, to.cls, moved.packets, moved.bytes);
    if (from.below != nullptr && lane != old_lane) {
        // The classifier took the flow out of the class that downgraded it (a new rule; or an
        // elephant verdict an RX lcore reached before it saw the hold): it is no longer that
        // class's to keep down or bring back. Its packets
        // went with it; the class forgets it now rather than "returning" it later, which
        // would be logged as a control action that moves nothing.
        ClassState& c = *classes_[static_cast<size_t>(class_of_lane_[old_lane])];
        erase_override(c, flow_hash);
        c.live.downgraded_flows.set(c.override_count);
    }
    return moved.packets;
}

SloClassStats SloGovernor::stats(size_t class_index) const {
    const LiveSloCounters& l = classes_[class_index]->live;
    SloClassStats s;
    s.windows_met = l.windows_met.read();
    s.windows_missed = l.windows_missed.read();
    s.windows_idle = l.windows_idle.read();
    s.last_window_start_ns = l.last_window_start_ns.read();
    s.last_percentile_ns = l.last_percentile_ns.read();
    s.last_packets = l.last_packets.read();
    s.last_met = l.last_met.read() != 0 || s.windows_met + s.windows_missed == 0;
    s.worst_window_start_ns = l.worst_window_start_ns.read();
    s.worst_percentile_ns = l.worst_percentile_ns.read();
    s.share_windows_met = l.share_windows_met.read();
    s.share_windows_missed = l.share_windows_missed.read();
    s.cap_bps = l.cap_bps.read();
    s.cap_changes = l.cap_changes.read();
    s.cap_floor_bps = l.cap_floor_bps.read();
    s.downgraded_flows = l.downgraded_flows.read();
    s.downgrades = l.downgrades.read();
    s.returns = l.returns.read();
    s.downgraded_packets = l.downgraded_packets.read();
    s.downgraded_bytes = l.downgraded_bytes.read();
    s.returned_packets = l.returned_packets.read();
    s.returned_bytes = l.returned_bytes.read();
    s.pressure_events = l.pressure_events.read();
    return s;
}

}  // namespace twinlane::slo
