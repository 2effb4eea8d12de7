"""More real captures of the kinds of program in captures/jax-h200, in shapes those 16 do not have.

usage: python3 variants.py NAME OUTDIR   (beside scen.py of captures/jax-h200, whose helpers it uses;
the environment as run.sh sets it: XLA_PYTHON_CLIENT_MEM_FRACTION=0.02, the HLO dump)

Each variant asks a question the 16 captures cannot:
  v-leak-grads      a training loop that keeps every step's gradients (a list of several arrays),
                    called through jax.jit directly (the compile happens inside the first call)
  v-retrace-eval    a step called through jax.jit at batch 512, then at a 96x batch: the retrace
                    compiles inside the call, not through .lower().compile()
  v-compile-full    a step compiled ahead (.lower().compile()) while 2.3 GiB of the 2.8 GiB pool is
                    taken, never called; the program ends normally: no OOM may be reported
  v-lm6-loop        the attention LM of scen.py with 6 layers in a Python loop, f32, S 1024
  v-lm6-scan        the same 6 layers in jax.lax.scan
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scen  # noqa: E402  (reads NAME OUTDIR from sys.argv, as this script does)
from scen import facts, stats, manal, prof, jax, jnp, np  # noqa: E402


def leak_grads(trace_dir):
    ws = scen.mlp_init(jax.random.PRNGKey(0), [1024, 4096, 4096, 1024])  # 96 MiB
    x = jax.random.normal(jax.random.PRNGKey(1), (4096, 1024))

    @jax.jit
    def grad_step(ws, x):
        return jax.value_and_grad(lambda w: jnp.mean(scen.mlp(w, x) ** 2))(ws)

    kept = []
    stats("before-trace")
    with jax.profiler.trace(trace_dir):
        try:
            for i in range(40):
                loss, g = grad_step(ws, x)
                kept.append(g)  # the leak: every step's gradients (3 arrays, 96 MiB) stay alive
                facts["steps"].append({"i": i, "loss": float(loss)})
                stats(f"after-step-{i}")
        except Exception as e:
            facts["error"] = str(e)
            stats("at-error")
    manal("grad_step", grad_step.lower(ws, x).compile())
    facts["kept"] = len(kept)


def retrace_eval(trace_dir):
    ws = scen.mlp_init(jax.random.PRNGKey(0), [2048, 8192, 2048])  # 128 MiB

    @jax.jit
    def train_step(ws, x):
        loss, g = jax.value_and_grad(lambda w: jnp.mean(scen.mlp(w, x) ** 2))(ws)
        return scen.sgd(ws, g), loss

    stats("before-trace")
    with jax.profiler.trace(trace_dir):
        try:
            for batch, n in ((512, 3), (49152, 1)):
                x = jax.random.normal(jax.random.PRNGKey(batch), (batch, 2048))
                if batch == 512:
                    manal(f"train_step_b{batch}", train_step.lower(ws, x).compile())
                for i in range(n):
                    ws, loss = train_step(ws, x)
                    facts["steps"].append({"batch": batch, "i": i, "loss": float(loss)})
                    stats(f"after-b{batch}-step-{i}")
        except Exception as e:
            facts["error"] = str(e)
            stats("at-error")


def compile_full(trace_dir):
    held = jnp.ones((576, 1024, 1024), jnp.float32)  # 2.25 GiB of the 2.8 GiB pool
    ws = scen.mlp_init(jax.random.PRNGKey(0), [1024, 4096, 1024])
    x = jax.random.normal(jax.random.PRNGKey(1), (1024, 1024))

    def train_step(ws, x):
        loss, g = jax.value_and_grad(lambda w: jnp.mean(scen.mlp(w, x) ** 2))(ws)
        return scen.sgd(ws, g), loss

    stats("before-trace")
    with jax.profiler.trace(trace_dir):
        try:
            compiled = jax.jit(train_step).lower(ws, x).compile()  # compiled ahead, never called
            manal("train_step", compiled)
            stats("after-compile")
        except Exception as e:
            facts["error"] = str(e)
            stats("at-error")
    facts["kept"] = [held.shape]


def lm6(trace_dir, scan):
    B, H, D, F, L, V, S = 4, 8, 512, 2048, 6, 8192, 1024
    params = scen.init_lm(jax.random.PRNGKey(0), L, D, F, V)
    if scan:
        params = {"emb": params["emb"],
                  "layers": jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *params["layers"])}
    tokens = jax.random.randint(jax.random.PRNGKey(1), (B, S), 0, V)

    def train_step(params, tokens):
        loss, grads = jax.value_and_grad(scen.lm_loss)(params, tokens, H, False, scan)
        return scen.sgd(params, grads), loss

    step = jax.jit(train_step, donate_argnums=0)
    stats("before-trace")
    with jax.profiler.trace(trace_dir):
        compiled = step.lower(params, tokens).compile()
        manal("train_step", compiled)
        try:
            for i in range(2):
                params, loss = compiled(params, tokens)
                facts["steps"].append({"i": i, "loss": float(loss)})
                stats(f"after-step-{i}")
        except Exception as e:
            facts["error"] = str(e)
            stats("at-error")
            prof("at-error")


VARIANTS = {
    "v-leak-grads": leak_grads,
    "v-retrace-eval": retrace_eval,
    "v-compile-full": compile_full,
    "v-lm6-loop": lambda d: lm6(d, scan=False),
    "v-lm6-scan": lambda d: lm6(d, scan=True),
}

if __name__ == "__main__":
    import time
    import traceback
    t0 = time.time()
    try:
        VARIANTS[scen.name](os.path.join(scen.out, "trace"))
    except Exception:
        facts["crash"] = traceback.format_exc()
    facts["wall_s"] = time.time() - t0
    scen.save()
    print(scen.name, "error" in facts and "OOM" or "ok", "crash" if "crash" in facts else "",
          round(facts["wall_s"], 1))
