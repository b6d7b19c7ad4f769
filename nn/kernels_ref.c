/* nn/kernels_ref.c — the plain reference kernels: straightforward loops, double accumulators where
 * it is cheap, no threads, no intrinsics. The optimized kernels in kernels.c and attention.c are
 * tested against these (tests/unit/test_nn_kernels.c). */
#include "nn/nn.h"

#include "common/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_EPS 1e-5

void nn_layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *w,
			      const float *b, int N, int C)
{
	for (int i = 0; i < N; i++) {
		const float *x = inp + (size_t)i * C;
		double m = 0, v = 0;
		for (int c = 0; c < C; c++)
			m += x[c];
		m /= C;
		for (int c = 0; c < C; c++)
			v += (x[c] - m) * (x[c] - m);
		v /= C;
		double s = 1.0 / sqrt(v + LN_EPS);
		float *o = out + (size_t)i * C;
		for (int c = 0; c < C; c++)
			o[c] = (float)((x[c] - m) * s * w[c] + b[c]);
		mean[i] = (float)m;
		rstd[i] = (float)s;
	}
}

void nn_layernorm_backward_ref(float *dinp, float *dw, float *db, const float *dout, const float *inp,
			       const float *w, const float *mean, const float *rstd, int N, int C)
{
	for (int i = 0; i < N; i++) {
		const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
		float *dx = dinp + (size_t)i * C;
		double m = mean[i], s = rstd[i];
		double dnorm_mean = 0, dnorm_norm_mean = 0;
		for (int c = 0; c < C; c++) {
			double xhat = (x[c] - m) * s;
			double dnorm = (double)w[c] * dy[c];
			dnorm_mean += dnorm;
			dnorm_norm_mean += dnorm * xhat;
		}
		dnorm_mean /= C;
		dnorm_norm_mean /= C;
		for (int c = 0; c < C; c++) {
			double xhat = (x[c] - m) * s;
			double dnorm = (double)w[c] * dy[c];
			db[c] += dy[c];
			dw[c] += (float)(xhat * dy[c]);
			dx[c] += (float)((dnorm - dnorm_mean - xhat * dnorm_norm_mean) * s);
		}
	}
}

void nn_residual_layernorm_forward_ref(float *res, float *out, uint16_t *out_h, float *mean, float *rstd,
				       const float *a, const float *b, const float *w, const float *bias, int N, int C)
{
	for (size_t i = 0; i < (size_t)N * C; i++)
		res[i] = a[i] + b[i];
	nn_layernorm_forward_ref(out, mean, rstd, res, w, bias, N, C);
	if (out_h)
		nn_bf16_from_f32_ref(out_h, out, (size_t)N * C);
}

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */

void nn_gelu_forward_ref(float *out, const float *inp, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double x = inp[i];
		out[i] = (float)(0.5 * x * (1.0 + tanh(GELU_K * (x + 0.044715 * x * x * x))));
	}
}

void nn_gelu_backward_ref(float *dinp, const float *inp, const float *dout, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double x = inp[i];
		double u = GELU_K * (x + 0.044715 * x * x * x);
		double th = tanh(u);
		double sech2 = 1.0 - th * th;
		double g = 0.5 * (1.0 + th) + 0.5 * x * sech2 * GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
		dinp[i] = (float)(g * dout[i]);
	}
}

void nn_layernorm_backward_bf16_ref(float *dinp, uint16_t *dinp_h, float *dlin, float *dw, float *db,
				    const float *dout, const float *inp, const float *w, const float *mean,
				    const float *rstd, int N, int C)
{
	nn_layernorm_backward_ref(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
	nn_bf16_from_f32_ref(dinp_h, dinp, (size_t)N * C);
	if (dlin)
		for (int i = 0; i < N; i++)
			for (int c = 0; c < C; c++)
				dlin[c] += dinp[(size_t)i * C + c];
}

void nn_gelu_backward_bf16_ref(float *dinp, uint16_t *dinp_h, float *db, const float *inp, const float *dout,
			       const uint16_t *dout_h, int N, int OC)
{
	for (int i = 0; i < N; i++)
		for (int c = 0; c < OC; c++) {
			size_t k = (size_t)i * OC + c;
			float dy = dout_h ? f32_from_bf16(dout_h[k]) : dout[k], d;
			nn_gelu_backward_ref(&d, inp + k, &dy, 1);
			nn_bf16_from_f32_ref(dinp_h + k, &d, 1);
			if (dinp)
				dinp[k] = d;
			if (db)
				db[c] += d;
		}
}

void nn_attention_forward_ref(float *out, float *lse, const float *qkv, int B, int T, int C, int H)
{
	int hs = C / H;
	double scale = 1.0 / sqrt((double)hs);
	size_t C3 = 3 * (size_t)C;
	double *a = malloc((size_t)T * sizeof *a);
	if (!a)
		abort();
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			for (int t = 0; t < T; t++) {
				const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
				double mx = -INFINITY;
				for (int j = 0; j <= t; j++) {
					const float *k = qkv + ((size_t)b * T + j) * C3 + C + (size_t)h * hs;
					double s = 0;
					for (int d = 0; d < hs; d++)
						s += (double)q[d] * k[d];
					a[j] = s * scale;
					if (a[j] > mx)
						mx = a[j];
				}
				double sum = 0;
				for (int j = 0; j <= t; j++)
					sum += exp(a[j] - mx);
				lse[((size_t)b * H + h) * T + t] = (float)(mx + log(sum));
				float *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
				for (int d = 0; d < hs; d++) {
					double s = 0;
					for (int j = 0; j <= t; j++)
						s += exp(a[j] - mx) / sum *
						     qkv[((size_t)b * T + j) * C3 + 2 * C + (size_t)h * hs + d];
					o[d] = (float)s;
				}
			}
	free(a);
}

void nn_attention_backward_ref(float *dqkv, const float *dout, const float *qkv, const float *lse, int B, int T,
			       int C, int H)
{
	int hs = C / H;
	double scale = 1.0 / sqrt((double)hs);
	size_t C3 = 3 * (size_t)C;
	double *a = malloc((size_t)T * sizeof *a);
	if (!a)
		abort();
	memset(dqkv, 0, (size_t)B * T * C3 * sizeof *dqkv);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			for (int t = 0; t < T; t++) {
				const float *dy = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
				const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
				float *dq = dqkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
				double l = lse[((size_t)b * H + h) * T + t];
				/* a[j] = softmax probability, recomputed from q, k and the row's log-sum-exp;
				 * datt[j] = dy · v_j ; dv_j += a[j] dy */
				double datt_dot_a = 0;
				for (int j = 0; j <= t; j++) {
					const float *k = qkv + ((size_t)b * T + j) * C3 + C + (size_t)h * hs;
					const float *v = qkv + ((size_t)b * T + j) * C3 + 2 * C + (size_t)h * hs;
					float *dv = dqkv + ((size_t)b * T + j) * C3 + 2 * C + (size_t)h * hs;
					double s = 0, dd = 0;
					for (int d = 0; d < hs; d++)
						s += (double)q[d] * k[d];
					a[j] = exp(s * scale - l);
					for (int d = 0; d < hs; d++) {
						dd += (double)dy[d] * v[d];
						dv[d] += (float)(a[j] * dy[d]);
					}
					datt_dot_a += dd * a[j];
				}
				for (int j = 0; j <= t; j++) {
					const float *v = qkv + ((size_t)b * T + j) * C3 + 2 * C + (size_t)h * hs;
					const float *k = qkv + ((size_t)b * T + j) * C3 + C + (size_t)h * hs;
					float *dk = dqkv + ((size_t)b * T + j) * C3 + C + (size_t)h * hs;
					double s = 0;
					for (int d = 0; d < hs; d++)
						s += (double)dy[d] * v[d];
					double dpre = a[j] * (s - datt_dot_a) * scale;
					for (int d = 0; d < hs; d++) {
						dq[d] += (float)(dpre * k[d]);
						dk[d] += (float)(dpre * q[d]);
					}
				}
			}
	free(a);
}

void nn_crossentropy_forward_ref(float *losses, float *lse, const float *logits, const int *targets, int N,
				 int V)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		double mx = -INFINITY, s = 0;
		for (int v = 0; v < V; v++)
			if (z[v] > mx)
				mx = z[v];
		for (int v = 0; v < V; v++)
			s += exp(z[v] - mx);
		double l = mx + log(s);
		lse[i] = (float)l;
		if (losses)
			losses[i] = (float)(l - z[targets[i]]);
	}
}

void nn_crossentropy_backward_ref(float *dlogits, const float *logits, const float *lse, const int *targets,
				  float dloss, int N, int V)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		float *dz = dlogits + (size_t)i * V;
		for (int v = 0; v < V; v++) {
			double p = exp((double)z[v] - lse[i]);
			dz[v] = (float)(dloss * (p - (v == targets[i] ? 1.0 : 0.0)));
		}
	}
}

void nn_kldiv_forward_ref(float *losses, float *lse, const float *logits, const float *probs, int N, int V)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V, *p = probs + (size_t)i * V;
		double mx = -INFINITY, s = 0, kl = 0;
		for (int v = 0; v < V; v++)
			if (z[v] > mx)
				mx = z[v];
		for (int v = 0; v < V; v++)
			s += exp(z[v] - mx);
		double l = mx + log(s);
		for (int v = 0; v < V; v++)
			if (p[v] > 0.0f)
				kl += p[v] * (log(p[v]) - (z[v] - l));
		lse[i] = (float)l;
		losses[i] = (float)kl;
	}
}

void nn_kldiv_backward_ref(float *dlogits, const float *logits, const float *lse, const float *probs, float dloss,
			   int N, int V)
{
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V, *p = probs + (size_t)i * V;
		float *dz = dlogits + (size_t)i * V;
		for (int v = 0; v < V; v++)
			dz[v] = (float)(dloss * (exp((double)z[v] - lse[i]) - p[v]));
	}
}

void nn_adamw_step_ref(const struct nn_adamw *o, int t, float *param, const float *grad, float *m, float *v,
		       size_t n, int decay)
{
	double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
	const float gs = o->grad_scale != 0.0f ? o->grad_scale : 1.0f;
	for (size_t i = 0; i < n; i++) {
		double g = grad[i] * gs;   /* the float product, as the fast path scales */
		double mi = o->beta1 * (double)m[i] + (1.0 - o->beta1) * g;
		double vi = o->beta2 * (double)v[i] + (1.0 - o->beta2) * g * g;
		m[i] = (float)mi;
		v[i] = (float)vi;
		double p = param[i];
		if (decay)
			p -= (double)o->lr * o->weight_decay * p;
		p -= o->lr * (mi / bc1) / (sqrt(vi / bc2) + o->eps);
		param[i] = (float)p;
	}
}
