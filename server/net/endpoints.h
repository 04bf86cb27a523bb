/*
 * endpoints — the bodies of flockd's JSON and Prometheus endpoints
 * (PROTOCOL.md §10): GET /healthz, /api/rooms and /metrics, rendered from
 * the lobby's rooms and, on a node of a cluster, the cluster's own parts
 * (cluster.h); /metrics starts with the process's counters (metrics.h).
 * http.h serves them.
 *
 * Each renders into the caller's buffer buf (cap bytes) and returns the
 * body's length, or a negative code if it did not fit (BASE_ENOSPACE,
 * PROTO_E_NOSPACE). cluster is NULL in a single process.
 *
 * Never: lws, sockets, HTTP. Threading: any thread holding the lobby's
 * lock (lobby_lock()); the cluster's parts take the cluster's own.
 */
#ifndef FLOCKD_ENDPOINTS_H
#define FLOCKD_ENDPOINTS_H

#include <stddef.h>

struct cluster;
struct lobby;

/* GET /healthz: the default room's tick and boids, the clients (of every
 * service thread) and rooms; on a node, NATS's state and the node's id. */
int endpoints_health(const struct lobby *l, struct cluster *cluster, size_t clients, char *buf,
                     size_t cap);

/* GET /api/rooms: this process's rooms, `default` first, then by name; on
 * a node, every room of the cluster, each with its node. */
int endpoints_rooms(const struct lobby *l, struct cluster *cluster, char *buf, size_t cap);

/* GET /metrics: the process's counters, each room's gauges, then on a
 * node the cluster's series. */
int endpoints_metrics(const struct lobby *l, struct cluster *cluster, char *buf, size_t cap);

#endif
