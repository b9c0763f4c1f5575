/* units.h: the units the k12 plugin converts between (private).
 *
 * A unit of the table converts to any other of the same quantity ("5 cm" is
 * "50 mm" and "0.05 m", "5 厘米" is "5 cm"). Units are matched after
 * normalisation (normalize.h) with '^', '{' and '}' ignored, so "cm²",
 * "cm^2", "cm^{2}", "cm2" and "㎠" are one unit; case matters ("mA" is not
 * "MA"). Units not in the table are compared as text. units.c is the table,
 * and docs/rewards.md lists it. */
#ifndef K12_UNITS_H
#define K12_UNITS_H

#include <stddef.h>

typedef struct k12_unit {
    const char *name;     /* as normalised, without '^' */
    const char *quantity; /* "length", "area", ...: units of one quantity convert */
    double factor;        /* the value of 1 name in the quantity's base unit */
} k12_unit;

/* The table's entry for the unit u[0..n), NULL when it has none. */
const k12_unit *k12_unit_find(const char *u, size_t n);

/* 1 when the units a and b are written the same, '^', '{' and '}' aside. */
int k12_unit_same(const char *a, size_t an, const char *b, size_t bn);

#endif
