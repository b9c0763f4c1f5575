/* units.c: the unit table (see units.h). Small on purpose: the units of
 * school mathematics and physics, in symbols and in Chinese; the base unit
 * of each quantity is the SI one. Temperatures are only °C (affine
 * conversions are out of scope), angles only degrees. */
#include "units.h"

#include <string.h>

static const k12_unit table[] = {
    /* length, base m */
    {"nm", "length", 1e-9}, {"\xce\xbcm", "length", 1e-6} /* μm */, {"um", "length", 1e-6},
    {"mm", "length", 1e-3}, {"cm", "length", 1e-2}, {"dm", "length", 1e-1},
    {"m", "length", 1}, {"km", "length", 1e3},
    {"\xe7\xba\xb3\xe7\xb1\xb3", "length", 1e-9},             /* 纳米 */
    {"\xe5\xbe\xae\xe7\xb1\xb3", "length", 1e-6},             /* 微米 */
    {"\xe6\xaf\xab\xe7\xb1\xb3", "length", 1e-3},             /* 毫米 */
    {"\xe5\x8e\x98\xe7\xb1\xb3", "length", 1e-2},             /* 厘米 */
    {"\xe5\x88\x86\xe7\xb1\xb3", "length", 1e-1},             /* 分米 */
    {"\xe7\xb1\xb3", "length", 1},                            /* 米 */
    {"\xe5\x8d\x83\xe7\xb1\xb3", "length", 1e3},              /* 千米 */
    {"\xe5\x85\xac\xe9\x87\x8c", "length", 1e3},              /* 公里 */
    /* area, base m² */
    {"mm2", "area", 1e-6}, {"cm2", "area", 1e-4}, {"dm2", "area", 1e-2}, {"m2", "area", 1},
    {"km2", "area", 1e6}, {"ha", "area", 1e4},
    {"\xe5\xb9\xb3\xe6\x96\xb9\xe6\xaf\xab\xe7\xb1\xb3", "area", 1e-6},  /* 平方毫米 */
    {"\xe5\xb9\xb3\xe6\x96\xb9\xe5\x8e\x98\xe7\xb1\xb3", "area", 1e-4},  /* 平方厘米 */
    {"\xe5\xb9\xb3\xe6\x96\xb9\xe5\x88\x86\xe7\xb1\xb3", "area", 1e-2},  /* 平方分米 */
    {"\xe5\xb9\xb3\xe6\x96\xb9\xe7\xb1\xb3", "area", 1},                 /* 平方米 */
    {"\xe5\xb9\xb3\xe6\x96\xb9\xe5\x8d\x83\xe7\xb1\xb3", "area", 1e6},   /* 平方千米 */
    {"\xe5\xb9\xb3\xe6\x96\xb9\xe5\x85\xac\xe9\x87\x8c", "area", 1e6},   /* 平方公里 */
    {"\xe5\x85\xac\xe9\xa1\xb7", "area", 1e4},                           /* 公顷 */
    /* volume, base m³ */
    {"mm3", "volume", 1e-9}, {"cm3", "volume", 1e-6}, {"dm3", "volume", 1e-3},
    {"m3", "volume", 1}, {"ml", "volume", 1e-6}, {"mL", "volume", 1e-6},
    {"l", "volume", 1e-3}, {"L", "volume", 1e-3},
    {"\xe7\xab\x8b\xe6\x96\xb9\xe6\xaf\xab\xe7\xb1\xb3", "volume", 1e-9}, /* 立方毫米 */
    {"\xe7\xab\x8b\xe6\x96\xb9\xe5\x8e\x98\xe7\xb1\xb3", "volume", 1e-6}, /* 立方厘米 */
    {"\xe7\xab\x8b\xe6\x96\xb9\xe5\x88\x86\xe7\xb1\xb3", "volume", 1e-3}, /* 立方分米 */
    {"\xe7\xab\x8b\xe6\x96\xb9\xe7\xb1\xb3", "volume", 1},                /* 立方米 */
    {"\xe6\xaf\xab\xe5\x8d\x87", "volume", 1e-6},                         /* 毫升 */
    {"\xe5\x8d\x87", "volume", 1e-3},                                     /* 升 */
    /* mass, base kg */
    {"mg", "mass", 1e-6}, {"g", "mass", 1e-3}, {"kg", "mass", 1}, {"t", "mass", 1e3},
    {"\xe6\xaf\xab\xe5\x85\x8b", "mass", 1e-6}, /* 毫克 */
    {"\xe5\x85\x8b", "mass", 1e-3},             /* 克 */
    {"\xe5\x8d\x83\xe5\x85\x8b", "mass", 1},    /* 千克 */
    {"\xe5\x85\xac\xe6\x96\xa4", "mass", 1},    /* 公斤 */
    {"\xe5\x90\xa8", "mass", 1e3},              /* 吨 */
    /* time, base s */
    {"s", "time", 1}, {"min", "time", 60}, {"h", "time", 3600},
    {"\xe7\xa7\x92", "time", 1},                         /* 秒 */
    {"\xe5\x88\x86\xe9\x92\x9f", "time", 60},            /* 分钟 */
    {"\xe5\xb0\x8f\xe6\x97\xb6", "time", 3600},          /* 小时 */
    {"\xe5\xa4\xa9", "time", 86400},                     /* 天 */
    /* speed, base m/s */
    {"m/s", "speed", 1}, {"km/h", "speed", 1 / 3.6}, {"km/s", "speed", 1e3},
    {"\xe7\xb1\xb3/\xe7\xa7\x92", "speed", 1},                            /* 米/秒 */
    {"\xe7\xb1\xb3\xe6\xaf\x8f\xe7\xa7\x92", "speed", 1},                 /* 米每秒 */
    {"\xe5\x8d\x83\xe7\xb1\xb3/\xe6\x97\xb6", "speed", 1 / 3.6},          /* 千米/时 */
    {"\xe5\x8d\x83\xe7\xb1\xb3/\xe5\xb0\x8f\xe6\x97\xb6", "speed", 1 / 3.6}, /* 千米/小时 */
    {"\xe5\x8d\x83\xe7\xb1\xb3\xe6\xaf\x8f\xe5\xb0\x8f\xe6\x97\xb6", "speed",
     1 / 3.6}, /* 千米每小时 */
    {"\xe5\x85\xac\xe9\x87\x8c/\xe5\xb0\x8f\xe6\x97\xb6", "speed", 1 / 3.6}, /* 公里/小时 */
    /* acceleration, base m/s² */
    {"m/s2", "acceleration", 1},
    /* temperature (°C only), angle (degrees only) */
    {"\xc2\xb0" "C", "temperature", 1},                  /* °C, also ℃ */
    {"\xe6\x91\x84\xe6\xb0\x8f\xe5\xba\xa6", "temperature", 1}, /* 摄氏度 */
    {"\xc2\xb0", "angle", 1},                            /* ° */
    {"\xe5\xba\xa6", "angle", 1},                        /* 度 */
    /* force, energy, power, pressure */
    {"N", "force", 1}, {"kN", "force", 1e3},
    {"\xe7\x89\x9b", "force", 1},                        /* 牛 */
    {"\xe7\x89\x9b\xe9\xa1\xbf", "force", 1},            /* 牛顿 */
    {"J", "energy", 1}, {"kJ", "energy", 1e3},
    {"\xe7\x84\xa6", "energy", 1},                       /* 焦 */
    {"\xe7\x84\xa6\xe8\x80\xb3", "energy", 1},           /* 焦耳 */
    {"W", "power", 1}, {"kW", "power", 1e3},
    {"\xe7\x93\xa6", "power", 1},                        /* 瓦 */
    {"\xe5\x8d\x83\xe7\x93\xa6", "power", 1e3},          /* 千瓦 */
    {"Pa", "pressure", 1}, {"kPa", "pressure", 1e3},
    {"\xe5\xb8\x95", "pressure", 1},                     /* 帕 */
    {"\xe5\x8d\x83\xe5\xb8\x95", "pressure", 1e3},       /* 千帕 */
    /* electricity */
    {"V", "voltage", 1}, {"mV", "voltage", 1e-3}, {"kV", "voltage", 1e3},
    {"\xe4\xbc\x8f", "voltage", 1},                      /* 伏 */
    {"A", "current", 1}, {"mA", "current", 1e-3},
    {"\xe5\xae\x89", "current", 1},                      /* 安 */
    {"\xce\xa9", "resistance", 1}, {"k\xce\xa9", "resistance", 1e3}, /* Ω kΩ */
    {"\xe6\xac\xa7", "resistance", 1},                   /* 欧 */
    {"Hz", "frequency", 1}, {"kHz", "frequency", 1e3},
};

static int ignored(char c) { return c == '^' || c == '{' || c == '}'; }

int k12_unit_same(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < an && ignored(a[i]))
            i++;
        while (j < bn && ignored(b[j]))
            j++;
        if (i == an || j == bn)
            return i == an && j == bn;
        if (a[i++] != b[j++])
            return 0;
    }
}

const k12_unit *k12_unit_find(const char *u, size_t n)
{
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
        if (k12_unit_same(u, n, table[k].name, strlen(table[k].name)))
            return &table[k];
    return NULL;
}
