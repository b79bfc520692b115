// The control server's protocol and robustness against a FakeDaemonApi: valid and pipelined
// requests, every kind of bad input answered with an error while the connection keeps
// working, disconnects mid-line, several clients, socket file handling.
#include "control/control_server.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "control/control_client.h"
#include "control/protocol.h"
#include "fake_daemon_api.h"
#include "socket_test_util.h"

namespace twinlane::control {
namespace {

using nlohmann::json;
using testing::FakeDaemonApi;
using testing::RawClient;
using testing::TempDir;

class ControlServerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_FALSE(dir_.path().empty());
        socket_path_ = dir_.path() + "/run/twinlane.sock";
        server_ = std::make_unique<ControlServer>(
            api_, ControlServerOptions{.socket_path = socket_path_, .socket_mode = 0660});
        auto error = server_->start();
        ASSERT_FALSE(error) << *error;
    }
    void TearDown() override { server_->stop(); }

    // Sends one line and returns the reply.
    json ask(RawClient& client, const std::string& line) {
        EXPECT_TRUE(client.send_all(line + "\n"));
        auto reply = client.read_reply();
        EXPECT_TRUE(reply.has_value()) << "no reply to " << line.substr(0, 80);
        return reply.value_or(json());
    }

    TempDir dir_;
    std::string socket_path_;
    FakeDaemonApi api_;
    std::unique_ptr<ControlServer> server_;
};

TEST_F(ControlServerTest, AnswersAValidRequest) {
    RawClient client(socket_path_);
    ASSERT_TRUE(client.connected());
    const json reply = ask(client, R"({"version":1,"id":7,"command":"status","args":{}})");
    EXPECT_EQ(reply["version"], 1);
    EXPECT_EQ(reply["id"], 7);
    EXPECT_EQ(reply["ok"], true);
    EXPECT_EQ(reply["result"]["policy_epoch"], 3);
}

// A client whose daemon stops under it (watch across a restart) is told so, whether the next
// request finds the connection reset or closed.
TEST_F(ControlServerTest, AClientIsToldTheDaemonClosedTheConnection) {
    auto connected = ControlClient::connect(socket_path_, std::chrono::seconds(2));
    ASSERT_TRUE(connected.client) << connected.error;
    ASSERT_TRUE(
        connected.client->request("status", json::object(), std::chrono::seconds(2)).message);
    server_->stop();
    for (int attempt = 0; attempt < 2; ++attempt) {  // the first send may still succeed
        const auto reply =
            connected.client->request("status", json::object(), std::chrono::seconds(2));
        EXPECT_FALSE(reply.message);
        EXPECT_EQ(reply.error, "the daemon closed the connection");
    }
}

TEST_F(ControlServerTest, PipelinedRequestsAreAnsweredInOrder) {
    RawClient client(socket_path_);
    std::string batch;
    for (int id = 1; id <= 50; ++id) {
        batch += format_request(id, id % 2 ? "stats" : "log.get",
                                id % 2 ? json{{"scope", "ports"}} : json::object());
    }
    ASSERT_TRUE(client.send_all(batch));
    for (int id = 1; id <= 50; ++id) {
        auto reply = client.read_reply();
        ASSERT_TRUE(reply);
        EXPECT_EQ((*reply)["id"], id);
        EXPECT_EQ((*reply)["ok"], true);
    }
}

TEST_F(ControlServerTest, BadRequestsGetErrorsAndTheConnectionKeepsWorking) {
    RawClient client(socket_path_);
    struct Case {
        std::string line;
        std::string error_part;
        json id;
    };
    const Case cases[] = {
        {"{not json", "not valid JSON", nullptr},
        {"[1,2,3]", "must be a JSON object", nullptr},
        {R"({"version":2,"id":1,"command":"status"})", "unsupported protocol version", 1},
        {R"({"id":2,"command":"status"})", "unsupported protocol version", 2},
        {R"({"version":1,"id":3,"command":"reboot"})", "unknown command 'reboot'", 3},
        {R"({"version":1,"id":4,"command":7})", "command must be a string", 4},
        {R"({"version":1,"id":"x","command":"status"})", "id must be an integer", nullptr},
        {R"({"version":1,"id":5,"command":"stats","args":{"scope":"disks"}})", "scope", 5},
        {R"({"version":1,"id":6,"command":"stats","args":[1]})", "args must be an object", 6},
        {R"({"version":1,"id":7,"command":"flows","args":{"top":0}})", "top must be", 7},
        {R"({"version":1,"id":8,"command":"flows","args":{"top":"5"}})", "top must be", 8},
        {R"({"version":1,"id":9,"command":"class.set","args":{"class":"a","key":"rate"}})",
         "missing argument 'value'", 9},
        {R"({"version":1,"id":10,"command":"status","args":{"verbose":true}})",
         "unknown argument 'verbose'", 10},
        {R"({"version":1,"id":11,"command":"policy.load","args":{"path":"rel.yaml"}})", "absolute",
         11},
        {R"({"version":1,"id":12,"command":"status","extra":1})", "unknown request field", 12},
        {std::string("{\"version\":1,\"id\":13,\"command\":\"\xff\xfe\"}"), "", nullptr},
    };
    for (const Case& c : cases) {
        const json reply = ask(client, c.line);
        EXPECT_EQ(reply["ok"], false) << c.line;
        if (!c.error_part.empty()) {
            EXPECT_NE(reply.value("error", "").find(c.error_part), std::string::npos)
                << c.line << " -> " << reply.dump();
            EXPECT_EQ(reply["id"], c.id) << c.line;
        }
    }
    // A failure from the API itself carries its details.
    const json rejected =
        ask(client, R"({"version":1,"id":20,"command":"rules.add","args":{"rule":"{name: x}"}})");
    EXPECT_EQ(rejected["ok"], false);
    EXPECT_EQ(rejected["error"], "rule rejected");
    EXPECT_EQ(rejected["details"][0], "classifier.rules[0].priority: bad");
    // Still serving on the same connection.
    EXPECT_EQ(ask(client, R"({"version":1,"id":21,"command":"log.get"})")["ok"], true);
}

TEST_F(ControlServerTest, OversizeLineIsRefusedAndSkipped) {
    RawClient client(socket_path_);
    // Sent in pieces, as a large write arrives: one error, then the next request is served.
    const std::string huge(kMaxRequestBytes + 1000, 'x');
    ASSERT_TRUE(client.send_all(huge.substr(0, 40'000)));
    ASSERT_TRUE(client.send_all(huge.substr(40'000)));
    auto reply = client.read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ((*reply)["ok"], false);
    EXPECT_NE((*reply)["error"].get<std::string>().find("exceeds 65536 bytes"), std::string::npos);
    ASSERT_TRUE(client.send_all(std::string(100'000, 'y') + "\n"));  // rest of the same line
    EXPECT_EQ(ask(client, R"({"version":1,"id":2,"command":"status"})")["id"], 2);
    // A line just under the limit is read (and rejected only because it is not a request).
    const json near_limit = ask(client, std::string(kMaxRequestBytes - 1, ' ') + "1");
    EXPECT_EQ(near_limit["ok"], false);
    EXPECT_NE(near_limit["error"].get<std::string>().find("JSON object"), std::string::npos);
}

TEST_F(ControlServerTest, ClientDisconnectMidLineDoesNotDisturbOthers) {
    RawClient steady(socket_path_);
    ASSERT_TRUE(steady.connected());
    {
        RawClient leaving(socket_path_);
        ASSERT_TRUE(leaving.send_all(R"({"version":1,"id":1,"comm)"));
        leaving.close_now();
    }
    {
        // Disconnects with a reply pending that it will never read.
        RawClient rude(socket_path_);
        ASSERT_TRUE(
            rude.send_all(std::string(R"({"version":1,"id":1,"command":"policy.show"})") + "\n"));
        rude.close_now();
    }
    EXPECT_EQ(ask(steady, R"({"version":1,"id":9,"command":"status"})")["ok"], true);
    RawClient late(socket_path_);
    EXPECT_EQ(ask(late, R"({"version":1,"id":10,"command":"status"})")["id"], 10);
}

TEST_F(ControlServerTest, CommandsReachTheApiWithTheirArguments) {
    RawClient client(socket_path_);
    ask(client,
        R"({"version":1,"id":1,"command":"class.set","args":{"class":"training","key":"rate","value":"8G"}})");
    ask(client, R"({"version":1,"id":2,"command":"flows","args":{"top":3}})");
    ask(client, R"({"version":1,"id":3,"command":"policy.load","args":{"path":"/etc/t.yaml"}})");
    ask(client, R"({"version":1,"id":4,"command":"log.set","args":{"level":"debug"}})");
    const auto calls = api_.calls();
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[0], "class.set training rate 8G");
    EXPECT_EQ(calls[1], "flows 3");
    EXPECT_EQ(calls[2], "policy.load /etc/t.yaml");
    EXPECT_EQ(calls[3], "log.set debug");
}

// policy.load reads a file only if the requesting user could read it: a member of the socket's
// group must not read root-only files through the daemon (a policy error quotes the text).
TEST(PolicyLoadRights, TheRequesterMustBeAbleToReadTheFile) {
    // Under /tmp, which every user may search (a TMPDIR elsewhere might not be): the test's
    // stranger must reach the directory for the cases that let it read.
    TempDir dir("/tmp");
    ASSERT_FALSE(dir.path().empty());
    ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);  // mkdtemp's 0700 would stop anyone else
    const std::string path = dir.path() + "/p.yaml";
    std::ofstream(path) << "version: 1\n";
    FakeDaemonApi api;
    Request request;
    request.command = "policy.load";
    request.args = {{"path", path}};
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    const uint32_t stranger = st.st_uid + 4242;  // neither the owner nor root
    const uint32_t other_group = st.st_gid + 4242;
    auto load_as = [&](uint32_t uid, uint32_t gid, mode_t mode) {
        EXPECT_EQ(chmod(path.c_str(), mode), 0);
        return dispatch(api, request, Requester{uid, gid});
    };
    const ApiResult refused = load_as(stranger, other_group, 0640);
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find("not readable by the requesting user (uid " +
                                   std::to_string(stranger) + ")"),
              std::string::npos)
        << refused.error();
    EXPECT_TRUE(api.calls().empty());                        // never reached the loader
    EXPECT_TRUE(load_as(stranger, st.st_gid, 0640).ok());    // its group may read
    EXPECT_FALSE(load_as(stranger, st.st_gid, 0600).ok());   // but not here
    EXPECT_TRUE(load_as(stranger, other_group, 0644).ok());  // anyone may read
    EXPECT_TRUE(load_as(0, 0, 0600).ok());                   // root reads anything
    EXPECT_TRUE(dispatch(api, request).ok());                // no credentials: not checked

    // A readable file in a directory the user may not search is out of its reach, and so of
    // the daemon's on its behalf; so is one reached through a symlink into that directory.
    const std::string closed = dir.path() + "/closed";
    ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
    const std::string inside = closed + "/q.yaml";
    std::ofstream(inside) << "version: 1\n";
    ASSERT_EQ(chmod(inside.c_str(), 0644), 0);
    const std::string link = dir.path() + "/link.yaml";
    ASSERT_EQ(symlink(inside.c_str(), link.c_str()), 0);
    ASSERT_EQ(chmod(path.c_str(), 0644), 0);
    for (const std::string& target : {inside, link, closed + "/missing.yaml"}) {
        request.args = {{"path", target}};
        EXPECT_FALSE(dispatch(api, request, Requester{stranger, other_group}).ok()) << target;
        EXPECT_TRUE(dispatch(api, request, Requester{st.st_uid, st.st_gid}).ok()) << target;
    }
    ASSERT_EQ(chmod(closed.c_str(), 0711), 0);  // search, but no listing: enough to reach it
    request.args = {{"path", link}};
    EXPECT_TRUE(dispatch(api, request, Requester{stranger, other_group}).ok());
}

TEST_F(ControlServerTest, SocketAndDirectoryPermissions) {
    struct stat info {};
    ASSERT_EQ(stat(socket_path_.c_str(), &info), 0);
    EXPECT_TRUE(S_ISSOCK(info.st_mode));
    EXPECT_EQ(info.st_mode & 07777, 0660u);
    ASSERT_EQ(stat((dir_.path() + "/run").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0750u);
}

TEST_F(ControlServerTest, StopRemovesTheSocketAndASecondServerIsRefused) {
    ControlServer second(api_, ControlServerOptions{.socket_path = socket_path_});
    auto error = second.start();
    ASSERT_TRUE(error);
    EXPECT_NE(error->find("another process"), std::string::npos) << *error;
    server_->stop();
    struct stat info {};
    EXPECT_NE(stat(socket_path_.c_str(), &info), 0);
}

TEST(ControlServerSocketFile, StaleSocketIsReplacedOtherFilesAreNot) {
    TempDir dir;
    FakeDaemonApi api;
    const std::string path = dir.path() + "/stale.sock";
    {
        // A socket file nobody listens on, as a crashed daemon leaves behind.
        const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
        ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        close(fd);
    }
    ControlServer server(api, ControlServerOptions{.socket_path = path, .socket_mode = 0600});
    auto error = server.start();
    ASSERT_FALSE(error) << *error;
    struct stat info {};
    ASSERT_EQ(stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0600u);
    server.stop();

    const std::string regular = dir.path() + "/file";
    std::ofstream(regular) << "keep me";
    ControlServer refused(api, ControlServerOptions{.socket_path = regular});
    auto refusal = refused.start();
    ASSERT_TRUE(refusal);
    EXPECT_NE(refusal->find("not a socket"), std::string::npos);
    EXPECT_TRUE(std::filesystem::is_regular_file(regular));
}

TEST(ControlServerSocketFile, ManyClientsAtOnce) {
    TempDir dir;
    FakeDaemonApi api;
    ControlServer server(api, ControlServerOptions{.socket_path = dir.path() + "/c.sock"});
    ASSERT_FALSE(server.start());
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 20; ++i) {
        clients.push_back(std::make_unique<RawClient>(dir.path() + "/c.sock"));
        ASSERT_TRUE(clients.back()->send_all(format_request(i, "status", json::object())));
    }
    for (int i = 0; i < 20; ++i) {
        auto reply = clients[i]->read_reply();
        ASSERT_TRUE(reply);
        EXPECT_EQ((*reply)["id"], i);
    }
}

TEST(ControlServerLimits, IdleAndTricklingClientsAreDisconnected) {
    TempDir dir;
    FakeDaemonApi api;
    const std::string path = dir.path() + "/ctl.sock";
    ControlServer server(api, ControlServerOptions{.socket_path = path,
                                                   .idle_timeout = std::chrono::milliseconds(500)});
    ASSERT_FALSE(server.start());
    RawClient silent(path);
    RawClient trickling(path);
    RawClient active(path);
    ASSERT_TRUE(silent.connected() && trickling.connected() && active.connected());
    // A request every 100 ms keeps a connection; part of a line never completed does not.
    const std::string partial = R"({"version":1,"id":1,"command":"st)";
    for (int round = 0; round < 10; ++round) {
        ASSERT_TRUE(active.send_all(format_request(round, "status", json::object())));
        const auto reply = active.read_reply();
        ASSERT_TRUE(reply);
        EXPECT_EQ((*reply)["id"], round);
        if (round < 3) trickling.send_all(partial.substr(round * 4, 4));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(silent.closed_within(std::chrono::milliseconds(100)));
    EXPECT_TRUE(trickling.closed_within(std::chrono::milliseconds(100)));
    EXPECT_FALSE(active.closed_within(std::chrono::milliseconds(0)));
    server.stop();
}

TEST(ControlServerLimits, AClientOverTheLimitGetsOneErrorAndIsClosed) {
    TempDir dir;
    FakeDaemonApi api;
    const std::string path = dir.path() + "/ctl.sock";
    ControlServer server(api, ControlServerOptions{.socket_path = path, .max_clients = 2});
    ASSERT_FALSE(server.start());
    // Two idle clients used to lock everyone else out (64 in the daemon): no reply, ever.
    RawClient first(path);
    RawClient second(path);
    for (RawClient* client : {&first, &second}) {
        ASSERT_TRUE(client->send_all(format_request(1, "status", json::object())));
        ASSERT_TRUE(client->read_reply());
    }
    RawClient third(path);
    ASSERT_TRUE(third.connected());
    const auto reply = third.read_reply();
    ASSERT_TRUE(reply);
    EXPECT_EQ((*reply)["ok"], false);
    EXPECT_EQ((*reply)["id"], nullptr);
    EXPECT_EQ((*reply)["error"], "too many clients (2 connected); try again later");
    EXPECT_TRUE(third.closed_within(std::chrono::seconds(2)));
    // ControlClient takes that reply as the answer to its request, also when the server closed
    // before the request was sent (EPIPE).
    for (const int delay_ms : {0, 100}) {
        auto refused = ControlClient::connect(path, std::chrono::seconds(2));
        ASSERT_TRUE(refused.client);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        const auto answer =
            refused.client->request("status", json::object(), std::chrono::seconds(2));
        ASSERT_TRUE(answer.message) << answer.error;
        EXPECT_EQ((*answer.message)["error"], "too many clients (2 connected); try again later");
    }
    // A freed slot takes the next client.
    first.close_now();
    std::optional<json> served;
    for (int attempt = 0; attempt < 50 && !(served && (*served)["ok"] == true); ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        RawClient next(path);
        next.send_all(format_request(2, "status", json::object()));
        served = next.read_reply();
    }
    ASSERT_TRUE(served);
    EXPECT_EQ((*served)["ok"], true);
    server.stop();
}

}  // namespace
}  // namespace twinlane::control
