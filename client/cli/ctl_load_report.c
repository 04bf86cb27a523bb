/*
 * ctl_load_report.c — the figures of `flockctl load` (see ctl_load.h):
 * every worker's counters and histogram and every client's frames and
 * bytes gathered into percentiles, and the summary printed.
 */
#define _POSIX_C_SOURCE 200809L

#include "ctl_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Nearest-rank percentile p (0..1] over every worker's age histogram, ms. */
static double age_percentile(const struct load *ld, uint64_t total, double p)
{
    if (!total)
        return NAN;
    uint64_t rank = (uint64_t)ceil(p * (double)total), seen = 0;
    for (size_t b = 0; b < AGE_BINS; b++) {
        for (int i = 0; i < ld->nworkers; i++)
            seen += ld->workers[i].age_bins[b];
        if (seen >= rank)
            return (double)(b * AGE_BIN_US) / 1000.0;
    }
    return (double)((AGE_BINS - 1) * AGE_BIN_US) / 1000.0;
}

/* Nearest-rank percentile p (0..1] of v[0..n), sorted here; NAN if n is 0. */
static double percentile(double *v, int n, double p)
{
    if (!n)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return v[(size_t)ceil(p * n) - 1];
}

/* Per-client figures of the welcomed clients over the window: snapshots
 * per second (p50 and p1, the slowest percent) and kB per second (p50,
 * p99 and the most). */
static void client_percentiles(const struct conn *conns, int n, struct load_results *r)
{
    double *rates = malloc((size_t)n * sizeof *rates), *kb = malloc((size_t)n * sizeof *kb);
    double span = r->window_s > 0 ? r->window_s : 1;
    int k = 0;
    for (int i = 0; rates && kb && i < n; i++) {
        if (!conns[i].welcomed)
            continue;
        rates[k] = r->window_s > 0 ? (double)conns[i].frames / r->window_s : 0;
        kb[k++] = (double)conns[i].bytes / span / 1000.0;
    }
    r->rate_p50 = r->rate_p1 = r->kb_p50 = r->kb_p99 = r->kb_max = NAN;
    if (k) {
        r->rate_p50 = percentile(rates, k, 0.50);
        r->rate_p1 = percentile(rates, k, 0.01);
        r->kb_p50 = percentile(kb, k, 0.50);
        r->kb_p99 = percentile(kb, k, 0.99);
        r->kb_max = kb[k - 1];
    }
    free(rates);
    free(kb);
}

static int compare_view(const void *x, const void *y)
{
    return memcmp(x, y, 4 * sizeof(float));
}

/* The views the clients' acks confirmed: how many, how many differ, the
 * largest sample and the lowest rate the server planned. */
static void view_figures(const struct conn *conns, int n, struct load_results *r)
{
    float(*views)[4] = malloc((size_t)n * sizeof *views);
    for (int i = 0; views && i < n; i++) {
        if (!conns[i].welcomed)
            continue;
        memcpy(views[r->views++], conns[i].view, sizeof views[0]);
        if (conns[i].plan.sample > r->sample_max)
            r->sample_max = conns[i].plan.sample;
        if (isnan(r->rate_min) || conns[i].plan.rate < r->rate_min)
            r->rate_min = conns[i].plan.rate;
    }
    if (views && r->views) {
        qsort(views, (size_t)r->views, sizeof views[0], compare_view);
        r->distinct_views = 1;
        for (int i = 1; i < r->views; i++)
            r->distinct_views += compare_view(views[i - 1], views[i]) != 0;
    }
    free(views);
}

/* One worker's counters added to r. */
static void add_worker(const struct worker *w, struct load_results *r)
{
    r->connected += w->connected;
    r->failures += w->failures;
    r->dropped += w->dropped;
    r->retries += w->retries;
    r->join_failures += w->join_failures;
    r->view_failures += w->view_failures;
    r->bytes += w->bytes;
    r->bad_frames += w->bad_frames;
    r->payload += w->payload;
    r->boids += w->boids;
    r->keys += w->keys;
    r->parts += w->parts;
    r->decode_failures += w->decode_failures;
    r->age_count += w->age_count;
    if (w->rcvbuf > r->rcvbuf)
        r->rcvbuf = w->rcvbuf;
    if (!r->decode_error)
        r->decode_error = w->decode_error;
    if (!r->first_error[0] && w->first_error[0])
        snprintf(r->first_error, sizeof r->first_error, "%s", w->first_error);
    if (!r->join_error[0] && w->join_error[0])
        snprintf(r->join_error, sizeof r->join_error, "%s", w->join_error);
    if (!r->view_error[0] && w->view_error[0])
        snprintf(r->view_error, sizeof r->view_error, "%s", w->view_error);
}

void ctl_load__collect(const struct load *ld, const struct conn *conns, struct load_results *r)
{
    r->clients = ld->a->clients;
    r->room = ld->a->join ? ld->a->room : CTL_JOIN_ROOM;
    r->decoded = ld->a->decode;
    r->rate_min = NAN;
    for (int i = 0; i < ld->nworkers; i++)
        add_worker(&ld->workers[i], r);
    for (int i = 0; i < r->clients; i++) {
        r->frames += conns[i].frames;
        r->skipped += conns[i].skipped;
        if (conns[i].welcomed && !r->protocol)
            r->protocol = conns[i].version;
        /* A client that got frames and decoded none failed them all. */
        if (conns[i].dec && conns[i].frames && !conns[i].decoded)
            r->decode_failures++;
    }
    client_percentiles(conns, r->clients, r);
    if (ld->a->view)
        view_figures(conns, r->clients, r);
    r->age_p50 = age_percentile(ld, r->age_count, 0.50);
    r->age_p99 = age_percentile(ld, r->age_count, 0.99);
}

static void print_number(const char *name, double v, const char *sep)
{
    if (isnan(v))
        printf("\"%s\":null%s", name, sep);
    else
        printf("\"%s\":%.2f%s", name, round(v * 100.0) / 100.0, sep);
}

/* The members after the first ones (which every version has had). */
static void print_more(const struct load_results *r)
{
    double frames = r->frames ? (double)r->frames : NAN;
    print_number("client_kb_per_s_p50", r->kb_p50, ",");
    print_number("client_kb_per_s_p99", r->kb_p99, ",");
    print_number("client_kb_per_s_max", r->kb_max, ",");
    print_number("parts_per_frame", r->protocol == PROTO_V3_VERSION ? r->parts / frames : NAN, ",");
    print_number("boids_per_frame", r->boids / frames, ",");
    printf("\"decode\":%s,\"decode_failures\":", r->decoded ? "true" : "false");
    if (r->decoded)
        printf("%llu,", (unsigned long long)r->decode_failures);
    else
        printf("null,");
    printf("\"views\":%d,\"distinct_views\":%d,\"view_failures\":%d,", r->views, r->distinct_views,
           r->view_failures);
    if (r->views)
        printf("\"view_sample_max\":%u,", r->sample_max);
    else
        printf("\"view_sample_max\":null,");
    print_number("view_rate_min", r->rate_min, "}\n");
}

void ctl_load__report(const struct load_results *r)
{
    printf("flockctl load: %d of %d clients connected in %.2f s (%d retries, %d failed); "
           "measured %.2f s\n",
           r->connected, r->clients, r->connect_s, r->retries, r->failures, r->window_s);
    if (r->first_error[0])
        printf("flockctl load: first error: %s\n", r->first_error);
    double span = r->window_s > 0 ? r->window_s : 1;
    printf("{\"clients\":%d,\"connected\":%d,", r->clients, r->connected);
    print_number("frames_per_s", (double)r->frames / span, ",");
    print_number("mb_per_s", (double)r->bytes / span / 1e6, ",");
    print_number("client_rate_p50", r->rate_p50, ",");
    print_number("client_rate_p1", r->rate_p1, ",");
    print_number("age_ms_p50", r->age_p50, ",");
    print_number("age_ms_p99", r->age_p99, ",");
    printf("\"skipped\":%llu,\"failures\":%d,\"dropped\":%d,\"retries\":%d,"
           "\"bad_frames\":%llu,",
           (unsigned long long)r->skipped, r->failures + r->dropped, r->dropped, r->retries,
           (unsigned long long)r->bad_frames);
    print_number("connect_s", r->connect_s, ",");
    print_number("seconds", r->window_s, ",");
    printf("\"protocol\":%d,\"key_frames\":%llu,\"rcvbuf\":%d,", r->protocol,
           (unsigned long long)r->keys, r->rcvbuf);
    if (r->boids)
        printf("\"bytes_per_boid\":%.4f,", (double)r->payload / (double)r->boids);
    else
        printf("\"bytes_per_boid\":null,");
    printf("\"room\":\"%s\",\"join_failures\":%d,", r->room, r->join_failures);
    print_more(r);
    fflush(stdout);
    if (r->join_failures)
        fprintf(stderr, "flockctl load: %d join(s) refused: %s\n", r->join_failures, r->join_error);
    if (r->view_failures)
        fprintf(stderr, "flockctl load: %d view(s) refused: %s\n", r->view_failures, r->view_error);
    if (r->decode_failures)
        fprintf(stderr, "flockctl load: %llu snapshot(s) did not decode (first: %s)\n",
                (unsigned long long)r->decode_failures,
                r->decode_error ? r->decode_error : "a client decoded none");
}
