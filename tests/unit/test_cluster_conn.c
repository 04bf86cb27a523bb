/*
 * Unit tests for what a node says of its NATS connection (cluster.h):
 * URLs shown with their passwords and tokens hidden, one URL or several,
 * with or without a scheme; and the start-up line's account of TLS and
 * of how the node signs in. Connecting itself is tested against a real
 * nats-server (tests/integration/test_cluster_secure.py).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cluster.h"

#include <string.h>

static void expect_shown(const char *urls, const char *shown)
{
    char out[256];
    cluster_show_urls(urls, out, sizeof out);
    assert_string_equal(out, shown);
}

static void urls_should_be_shown_without_their_passwords_or_tokens(void **state)
{
    (void)state;
    expect_shown("nats://127.0.0.1:4222", "nats://127.0.0.1:4222");
    expect_shown("nats://flockd:s3cret@127.0.0.1:4222", "nats://flockd:***@127.0.0.1:4222");
    expect_shown("tls://t0ken@nats.example:4222", "tls://***@nats.example:4222");
    expect_shown("u:p@host", "u:***@host");
    expect_shown("nats://u:p@a:1,nats://b:2,tok@c", "nats://u:***@a:1,nats://b:2,***@c");
    /* A password holding ':' or '@' is hidden whole: the user ends at the
     * first ':', the host starts after the last '@'. */
    expect_shown("nats://u:a:b@c@h:1", "nats://u:***@h:1");
    expect_shown("", "");
}

static void a_shown_url_list_should_be_cut_short_to_fit(void **state)
{
    (void)state;
    char out[12];
    cluster_show_urls("nats://u:secret@a-long-host:4222", out, sizeof out);
    assert_string_equal(out, "nats://u:**");
    cluster_show_urls("nats://u:secret@h", out, 1);
    assert_string_equal(out, "");
}

static void the_start_up_line_should_say_tls_and_how_the_node_signs_in(void **state)
{
    (void)state;
    char out[256];
    struct cluster_config cfg = {.url = "nats://h:4222"};
    cluster_describe(&cfg, out, sizeof out);
    assert_string_equal(out, "nats://h:4222 (no TLS)");
    cfg = (struct cluster_config){.url = "tls://h:4222", .user = "flockd", .password = "pw"};
    cluster_describe(&cfg, out, sizeof out);
    assert_string_equal(out, "tls://h:4222 (TLS, signed in as flockd)");
    cfg = (struct cluster_config){.url = "nats://h:4222", .ca = "ca.pem", .token = "t0k"};
    cluster_describe(&cfg, out, sizeof out);
    assert_string_equal(out, "nats://h:4222 (TLS, signed in with a token)");
    cfg = (struct cluster_config){.url = "nats://a:1, TLS://b:2", .creds = "/etc/n.creds"};
    cluster_describe(&cfg, out, sizeof out);
    assert_string_equal(
        out, "nats://a:1, TLS://b:2 (TLS, signed in with the credentials of /etc/n.creds)");
    cfg = (struct cluster_config){.url = "nats://u:pw@h", .user = "", .token = ""};
    cluster_describe(&cfg, out, sizeof out);
    assert_string_equal(out, "nats://u:***@h (no TLS, signed in as the URL says)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(urls_should_be_shown_without_their_passwords_or_tokens),
        cmocka_unit_test(a_shown_url_list_should_be_cut_short_to_fit),
        cmocka_unit_test(the_start_up_line_should_say_tls_and_how_the_node_signs_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
