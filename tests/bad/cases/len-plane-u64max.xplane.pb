
ÿÿÿÿÿÿÿÿÿ
Îc/host:metadata"’jit_f(1