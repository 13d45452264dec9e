/* trlvr's portable objective ABI (version 1).
 *
 * An objective as a pure function of host arrays, loadable into any trlvr host (the
 * default static binary included) from a shared library built by any compiler or
 * language. The host computes per-token log-probs with autodiff, hands their values here,
 * and turns the returned loss and dLoss/dlogp into a surrogate whose gradient is exactly
 * dLoss/dlogp. What it can express: any loss that is a function of the per-token
 * log-probs of the sampled tokens (PPO/GRPO clipping, Dr. GRPO, RLOO/REINFORCE, CISPO,
 * GSPO's whole-row ratios, sample-based KL estimators such as junior-KL's k3). What it
 * cannot: anything needing the full vocabulary distribution (entropy bonuses, exact KL),
 * or hidden states.
 *
 * Layout: every [rows * width] array is row-major; position (i, t) is index i*width + t.
 * Only positions with mask = 1 (response tokens written by the senior) may affect the
 * loss; values elsewhere are arbitrary (possibly NaN) and their gradient must be 0.
 *
 * Export one symbol:  const trlvr_portable_objective TRLVR_PORTABLE_OBJECTIVE = {...};
 * The library is never unloaded. `loss` may be called from several threads at once with
 * the same state: keep the state read-only after `create`.
 */
#ifndef TRLVR_OBJECTIVE_H
#define TRLVR_OBJECTIVE_H

#include <stddef.h>
#include <stdint.h>

#define TRLVR_PORTABLE_ABI 1

typedef struct {
    uint64_t rows;
    uint64_t width;
    const float *log_probs;      /* log pi_theta of each token, [rows * width] */
    const float *old_log_probs;  /* log pi_old, [rows * width] */
    const float *ref_log_probs;  /* log pi_ref (the junior), or NULL if not needs_reference */
    const float *advantages;     /* one per row, [rows] */
    const uint8_t *mask;         /* 1 where the loss applies, [rows * width] */
    uint64_t mini_batch_tokens;    /* loss tokens in the whole mini-batch (denominator) */
    uint64_t mini_batch_sequences; /* rows with at least one loss token, whole mini-batch */
} trlvr_batch;

typedef struct {
    uint32_t abi_version;        /* TRLVR_PORTABLE_ABI */
    const char *name;            /* the objective's name in recipes */
    const char *about;           /* one line for `trlvr plugins` */
    const char *version;         /* the plugin's version */
    uint8_t needs_reference;     /* 1: the host fills ref_log_probs with the junior's */
    /* The three functions must not be NULL (the host refuses the library otherwise). */
    /* Parses the config (JSON text, "null" for defaults). Returns the state, or NULL with
     * a NUL-terminated message of at most err_len bytes in err. */
    void *(*create)(const char *config_json, char *err, size_t err_len);
    /* Writes the loss and dLoss/dlogp ([rows * width], zero-filled by the host). Returns
     * 0, or non-zero with a message in err. */
    int32_t (*loss)(const void *state, const trlvr_batch *batch, double *loss, float *grad,
                    char *err, size_t err_len);
    void (*destroy)(void *state);
} trlvr_portable_objective;

#endif
