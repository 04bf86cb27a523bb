/*
 * Unit tests for the parameter registry (params.h): every row is
 * self-consistent (default inside its bounds, unique names, distinct
 * fields), lookups by name and index round-trip, defaults fill the whole
 * parameter block, and validation refuses non-finite, out-of-range and
 * fractional-switch values while accepting both bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "params.h"

#include <math.h>
#include <string.h>

static void registry_is_not_empty_and_ends_at_its_count(void **state)
{
    (void)state;
    assert_true(sim_param_count() > 0);
    assert_non_null(sim_param_at(0));
    assert_non_null(sim_param_at(sim_param_count() - 1));
    assert_null(sim_param_at(sim_param_count()));
    assert_null(sim_param_at((size_t)-1));
}

static void every_default_lies_within_its_own_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        assert_true(isfinite(d->min) && isfinite(d->max) && isfinite(d->def));
        assert_true(d->min <= d->max);
        if (!sim_param_valid(d, d->def))
            fail_msg("%s: default %g outside [%g, %g]", d->name, (double)d->def, (double)d->min,
                     (double)d->max);
        if (d->integer && (d->min != floorf(d->min) || d->max != floorf(d->max)))
            fail_msg("%s: switch with fractional bounds", d->name);
    }
}

static void every_parameter_has_a_unique_name_and_help_text(void **state)
{
    (void)state;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *a = sim_param_at(i);
        assert_non_null(a->name);
        assert_true(strlen(a->name) > 0);
        assert_non_null(a->unit);
        assert_non_null(a->help);
        assert_true(strlen(a->help) > 0);
        for (size_t j = i + 1; j < sim_param_count(); j++)
            if (strcmp(a->name, sim_param_at(j)->name) == 0)
                fail_msg("name %s appears twice", a->name);
    }
}

static void every_parameter_describes_its_own_float_of_the_block(void **state)
{
    (void)state;
    /* The registry covers struct sim_params exactly: one float per row. */
    assert_int_equal(sim_param_count() * sizeof(float), sizeof(struct sim_params));
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *a = sim_param_at(i);
        assert_int_equal(a->offset % sizeof(float), 0);
        assert_true(a->offset + sizeof(float) <= sizeof(struct sim_params));
        for (size_t j = i + 1; j < sim_param_count(); j++)
            if (a->offset == sim_param_at(j)->offset)
                fail_msg("%s and %s share a field", a->name, sim_param_at(j)->name);
    }
}

static void find_returns_the_registered_descriptor_for_every_name(void **state)
{
    (void)state;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        assert_ptr_equal(sim_param_find(d->name), d);
    }
}

static void find_returns_null_for_names_that_are_not_registered(void **state)
{
    (void)state;
    assert_null(sim_param_find(NULL));
    assert_null(sim_param_find(""));
    assert_null(sim_param_find("no_such_parameter"));
    assert_null(sim_param_find("MAX_SPEED"));
    assert_null(sim_param_find("max_speed "));
    assert_null(sim_param_find("max_spee"));
}

static void params_default_fills_every_field_with_its_registry_default(void **state)
{
    (void)state;
    struct sim_params p;
    memset(&p, 0xff, sizeof p); /* NaN everywhere: every field must be written */
    sim_params_default(&p);
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        assert_float_equal(*sim_param_field(&p, d), d->def, 0.0f);
    }
}

static void param_field_points_at_the_named_struct_member(void **state)
{
    (void)state;
    struct sim_params p;
    sim_params_default(&p);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("max_speed")), &p.max_speed);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("min_speed")), &p.min_speed);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("max_force")), &p.max_force);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("perception")), &p.perception);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("separation_radius")),
                     &p.separation_radius);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("fov")), &p.fov);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("w_separation")), &p.w_separation);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("w_alignment")), &p.w_alignment);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("w_cohesion")), &p.w_cohesion);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("w_seek")), &p.w_seek);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("w_avoid")), &p.w_avoid);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("arrive_radius")), &p.arrive_radius);
    assert_ptr_equal(sim_param_field(&p, sim_param_find("own_group_only")), &p.own_group_only);
}

static void param_valid_accepts_both_bounds_and_refuses_just_beyond_them(void **state)
{
    (void)state;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        assert_true(sim_param_valid(d, d->min));
        assert_true(sim_param_valid(d, d->max));
        assert_false(sim_param_valid(d, nextafterf(d->min, -INFINITY)));
        assert_false(sim_param_valid(d, nextafterf(d->max, INFINITY)));
    }
}

static void param_valid_refuses_nan_and_infinities(void **state)
{
    (void)state;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        assert_false(sim_param_valid(d, NAN));
        assert_false(sim_param_valid(d, -NAN));
        assert_false(sim_param_valid(d, INFINITY));
        assert_false(sim_param_valid(d, -INFINITY));
    }
}

static void param_valid_refuses_fractions_for_switches_only(void **state)
{
    (void)state;
    int switches = 0;
    for (size_t i = 0; i < sim_param_count(); i++) {
        const struct sim_param_desc *d = sim_param_at(i);
        float mid = 0.5f * (d->min + d->max);
        if (d->integer) {
            switches++;
            assert_false(sim_param_valid(d, d->min + 0.5f));
            assert_false(sim_param_valid(d, nextafterf(d->min, INFINITY)));
        } else {
            assert_true(sim_param_valid(d, mid));
        }
    }
    assert_true(switches > 0); /* own_group_only is a switch */
    assert_true(sim_param_find("own_group_only")->integer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_is_not_empty_and_ends_at_its_count),
        cmocka_unit_test(every_default_lies_within_its_own_bounds),
        cmocka_unit_test(every_parameter_has_a_unique_name_and_help_text),
        cmocka_unit_test(every_parameter_describes_its_own_float_of_the_block),
        cmocka_unit_test(find_returns_the_registered_descriptor_for_every_name),
        cmocka_unit_test(find_returns_null_for_names_that_are_not_registered),
        cmocka_unit_test(params_default_fills_every_field_with_its_registry_default),
        cmocka_unit_test(param_field_points_at_the_named_struct_member),
        cmocka_unit_test(param_valid_accepts_both_bounds_and_refuses_just_beyond_them),
        cmocka_unit_test(param_valid_refuses_nan_and_infinities),
        cmocka_unit_test(param_valid_refuses_fractions_for_switches_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
