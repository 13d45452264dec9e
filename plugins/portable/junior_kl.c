/* The junior-KL ablation (method.md §4) written against the portable objective ABI, in C:
 * GRPO's clipped surrogate (dual clip, token-mean) on senior tokens plus
 * beta * token-mean of the k3 estimate of KL(pi_theta || pi_junior).
 *
 *   cc -shared -fPIC -O2 -o libjunior_kl_c.so plugins/portable/junior_kl.c -lm
 *   trlvr plugins --load ./libjunior_kl_c.so
 *
 * Config: {"beta": 0.001, "clip_low": 0.2, "clip_high": 0.2, "dual_clip": 3.0}, every
 * key optional. The log-ratio is clamped to +-20 before exp, the KL's log-ratio to +-20
 * and k3 to +-10, as in trlvr's Grpo and kl_per_token. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trlvr_objective.h"

typedef struct {
    double beta, clip_low, clip_high, dual_clip;
} config;

static void say(char *err, size_t len, const char *message) {
    if (len > 0) snprintf(err, len, "%s", message);
}

static const char *skip(const char *s) {
    while (isspace((unsigned char)*s)) s++;
    return s;
}

/* Reads null, {} or a flat object of the four numeric keys. */
static void *create(const char *json, char *err, size_t err_len) {
    config c = {0.001, 0.2, 0.2, 3.0};
    const char *s = skip(json);
    if (strncmp(s, "null", 4) == 0) {
        s = skip(s + 4);
    } else {
        if (*s != '{') { say(err, err_len, "config must be a JSON object"); return NULL; }
        s = skip(s + 1);
        while (*s != '}') {
            char key[32];
            size_t n = 0;
            if (*s != '"') { say(err, err_len, "expected a key"); return NULL; }
            for (s++; *s && *s != '"' && n + 1 < sizeof key; s++) key[n++] = *s;
            key[n] = 0;
            if (*s != '"') { say(err, err_len, "key too long or unterminated"); return NULL; }
            s = skip(s + 1);
            if (*s != ':') { say(err, err_len, "expected ':'"); return NULL; }
            char *end;
            double v = strtod(s + 1, &end);
            if (end == s + 1) { say(err, err_len, "values must be numbers"); return NULL; }
            if (!strcmp(key, "beta")) c.beta = v;
            else if (!strcmp(key, "clip_low")) c.clip_low = v;
            else if (!strcmp(key, "clip_high")) c.clip_high = v;
            else if (!strcmp(key, "dual_clip")) c.dual_clip = v;
            else {
                if (err_len > 0)
                    snprintf(err, err_len, "unknown key \"%s\"; allowed: beta, clip_low, clip_high, dual_clip", key);
                return NULL;
            }
            s = skip(end);
            if (*s == ',') s = skip(s + 1);
            else if (*s != '}') { say(err, err_len, "expected ',' or '}'"); return NULL; }
        }
        s = skip(s + 1);
    }
    if (*s) { say(err, err_len, "unexpected text after the config"); return NULL; }
    if (!(c.beta >= 0.0)) { say(err, err_len, "junior-KL beta must be >= 0"); return NULL; }
    if (!(c.clip_low >= 0.0 && c.clip_low < 1.0 && c.clip_high >= 0.0)) {
        say(err, err_len, "clip range must satisfy 0 <= clip_low < 1, clip_high >= 0");
        return NULL;
    }
    if (!(c.dual_clip > 1.0)) { say(err, err_len, "dual_clip must be > 1"); return NULL; }
    config *state = malloc(sizeof c);
    if (!state) { say(err, err_len, "out of memory"); return NULL; }
    *state = c;
    return state;
}

static double clamp(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

static int32_t loss(const void *state, const trlvr_batch *b, double *out, float *grad, char *err,
                    size_t err_len) {
    const config *c = state;
    if (!b->ref_log_probs) { say(err, err_len, "junior-KL needs the junior's log-probs"); return 1; }
    double tokens = b->mini_batch_tokens > 0 ? (double)b->mini_batch_tokens : 1.0;
    double total = 0.0;
    for (uint64_t i = 0; i < b->rows; i++) {
        double a = b->advantages[i];
        for (uint64_t t = 0; t < b->width; t++) {
            size_t k = i * b->width + t;
            if (!b->mask[k]) continue;
            double lp = b->log_probs[k];
            /* GRPO's clipped surrogate, d/dlp through the ratio where it is not clamped. */
            double lr = lp - b->old_log_probs[k];
            int lr_free = lr > -20.0 && lr < 20.0;
            double r = exp(clamp(lr, -20.0, 20.0));
            double unclipped = -a * r;
            double clipped = -a * clamp(r, 1.0 - c->clip_low, 1.0 + c->clip_high);
            double per = unclipped, d = lr_free ? -a * r : 0.0;
            if (clipped > unclipped) { per = clipped; d = 0.0; }
            if (a < 0.0 && per > -c->dual_clip * a) { per = -c->dual_clip * a; d = 0.0; }
            /* k3 = exp(delta) - delta - 1, delta = log pi_jun - log pi_theta. */
            double delta = b->ref_log_probs[k] - lp;
            int delta_free = delta > -20.0 && delta < 20.0;
            delta = clamp(delta, -20.0, 20.0);
            double k3 = exp(delta) - delta - 1.0;
            double dk = (delta_free && k3 > -10.0 && k3 < 10.0) ? -(exp(delta) - 1.0) : 0.0;
            total += per + c->beta * clamp(k3, -10.0, 10.0);
            grad[k] = (float)((d + c->beta * dk) / tokens);
        }
    }
    *out = total / tokens;
    return 0;
}

static void destroy(void *state) { free(state); }

const trlvr_portable_objective TRLVR_PORTABLE_OBJECTIVE = {
    TRLVR_PORTABLE_ABI,
    "junior-kl-c",
    "junior-KL (GRPO + beta * token-mean k3 KL to the junior), portable C ABI",
    "0.1.0",
    1,
    create,
    loss,
    destroy,
};
