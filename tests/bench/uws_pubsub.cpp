/*
 * uws_pubsub — the yardstick of flockd's fan-out: a pub/sub broadcast
 * server on uWebSockets (its own event loop and topic tree) that sends
 * every viewer the same frames flockd would, at the same rate, so that
 * `flockctl load` can measure both alike (tests/bench/fanout_bench.py,
 * case uws=PATH; server/bench/README.md says how to build it).
 *
 *   uws_pubsub PORT WELCOME_FILE FRAMES_FILE HZ
 *
 * On each connection it takes the flock.v2 subprotocol, sends the welcome
 * (a text file: the JSON of a flockd welcome) and subscribes the viewer to
 * one topic; HZ times a second it publishes the next frame of FRAMES_FILE
 * (u32 little-endian length, then the frame; `snapbench --dump` writes
 * them), cycling, with the tick and server_time_us of its header set to
 * now. A viewer more than a few frames behind has frames dropped (its
 * backpressure limit), as flockd skips them.
 */
#include "App.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Viewer {};

std::vector<std::string> frames;
size_t next_frame;
uint64_t tick;
uWS::App *app;

std::string read_file(const char *path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool read_frames(const char *path)
{
    std::string all = read_file(path);
    for (size_t at = 0; at + 4 <= all.size();) {
        uint32_t len = (uint8_t)all[at] | (uint8_t)all[at + 1] << 8 | (uint8_t)all[at + 2] << 16 |
                       (uint32_t)(uint8_t)all[at + 3] << 24;
        if (at + 4 + len > all.size() || len < 24)
            return false;
        frames.emplace_back(all, at + 4, len);
        at += 4 + len;
    }
    return !frames.empty();
}

void put_u64(std::string &f, size_t at, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        f[at + k] = (char)(v >> (8 * k));
}

void publish_next()
{
    std::string &f = frames[next_frame++ % frames.size()];
    uint64_t us = (uint64_t)std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    put_u64(f, 8, ++tick);  /* tick */
    put_u64(f, 16, us);     /* server_time_us */
    app->publish("room", f, uWS::OpCode::BINARY, false);
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::cerr << "usage: uws_pubsub PORT WELCOME_FILE FRAMES_FILE HZ\n";
        return 2;
    }
    int port = std::atoi(argv[1]);
    static std::string welcome = read_file(argv[2]);
    double hz = std::atof(argv[4]);
    if (welcome.empty() || !read_frames(argv[3]) || !(hz > 0 && hz <= 1000)) {
        std::cerr << "uws_pubsub: no welcome, no frames, or a bad rate\n";
        return 2;
    }
    uWS::App a;
    a.ws<Viewer>("/*", {.compression = uWS::DISABLED,
                        .maxPayloadLength = 64 * 1024,
                        .idleTimeout = 120,
                        .maxBackpressure = (unsigned)(4 * frames[0].size() + 65536),
                        .closeOnBackpressureLimit = false,
                        .resetIdleTimeoutOnSend = true,
                        .sendPingsAutomatically = false,
                        .upgrade =
                            [](auto *res, auto *req, auto *context) {
                                res->template upgrade<Viewer>(
                                    {}, req->getHeader("sec-websocket-key"), "flock.v2",
                                    req->getHeader("sec-websocket-extensions"), context);
                            },
                        .open =
                            [](auto *ws) {
                                ws->send(welcome, uWS::OpCode::TEXT);
                                ws->subscribe("room");
                            }})
        .listen(port, [port](auto *listen) {
            if (!listen) {
                std::cerr << "uws_pubsub: cannot listen on " << port << "\n";
                std::exit(1);
            }
            std::cout << "uws_pubsub: listening on " << port << std::endl;
        });
    app = &a;
    struct us_loop_t *loop = (struct us_loop_t *)uWS::Loop::get();
    struct us_timer_t *timer = us_create_timer(loop, 0, 0);
    int ms = (int)(1000.0 / hz + 0.5);
    us_timer_set(timer, [](struct us_timer_t *) { publish_next(); }, ms, ms);
    a.run();
    return 0;
}
