//! The Markov chain of one redundancy unit: states 0..=m count failed disks, state m+1 is lost
//! data. Failures move up, repairs move down, and a failure that exposes an unreadable sector
//! jumps straight to lost data (a birth-death chain with killing).
//!
//! The plan uses the chain the way MTTDL models usually do: a unit spends nearly all its time
//! with every disk good; each failure starts an *excursion* (wait, rebuild, perhaps more
//! failures) that ends back at all-good or in lost data. [`BirthDeath::loss_rate`] is the rate
//! of failures that end in loss, exact for the excursion; losses then arrive as a Poisson
//! process. [`BirthDeath::mean_time_to_absorption`] and [`BirthDeath::absorbed_by`] solve the
//! whole chain exactly; tests use them to bound the error of that approximation.
//!
//! Numbers span many orders of magnitude (failure rates near 1e-6/h, repairs near 1e-1/h,
//! missions of 1e4..1e5 h, loss probabilities down to 1e-20), so every computation uses only
//! sums, products and quotients of non-negative terms: no subtraction that could cancel.

/// A birth-death chain with killing and an absorbing top state.
///
/// From state k (0..=m): `up[k]` to k+1 (from m that is the loss state), `down[k]` to k-1
/// (`down[0]` must be 0), `kill[k]` straight to the loss state. Rates are per hour.
#[derive(Debug, Clone, PartialEq)]
pub struct BirthDeath {
    /// Rates to the next state up, per hour.
    pub up: Vec<f64>,
    /// Rates to the next state down, per hour (`down[0]` = 0).
    pub down: Vec<f64>,
    /// Rates straight to the loss state, per hour.
    pub kill: Vec<f64>,
}

impl BirthDeath {
    /// Builds a chain without killing; `up` and `down` must be the same length, non-negative.
    pub fn new(up: Vec<f64>, down: Vec<f64>) -> BirthDeath {
        let kill = vec![0.0; up.len()];
        BirthDeath::with_kill(up, down, kill)
    }

    /// Builds a chain with killing rates.
    pub fn with_kill(up: Vec<f64>, down: Vec<f64>, kill: Vec<f64>) -> BirthDeath {
        debug_assert!(up.len() == down.len() && up.len() == kill.len());
        BirthDeath { up, down, kill }
    }

    /// Rate per hour, from the all-good state, of failures whose excursion ends in lost data:
    /// `kill[0] + up[0] g[1]`, where `g[k]`, the chance of reaching the loss state before
    /// falling back to k-1 when starting at k, follows from the top down:
    ///
    /// `g[m+1] = 1`, `g[k] = (kill[k] + up[k] g[k+1]) / (kill[k] + down[k] + up[k] g[k+1])`.
    ///
    /// For raid5 (m = 1) this is `n lambda (p + (1-p) (n-1) lambda / ((n-1) lambda + mu))`.
    /// Faster repairs, fewer disks and lower failure rates can only lower it.
    pub fn loss_rate(&self) -> f64 {
        let mut g = 1.0; // g[k+1], starting above the top state
        for k in (1..self.up.len()).rev() {
            let (u, d, x) = (self.up[k], self.down[k], self.kill[k]);
            let reach = x + u * g;
            g = if reach > 0.0 {
                reach / (reach + d)
            } else {
                0.0
            };
        }
        self.kill[0] + self.up[0] * g
    }

    /// Mean time from state 0 to absorption, hours, solving the whole chain exactly.
    ///
    /// For each k, looking only at states 0..=k: `s[k]`, the chance of being absorbed before
    /// first reaching k+1, and `t[k]`, the mean time until either happens, starting at k:
    ///
    /// `s[k] = (kill[k] + down[k] s[k-1]) / (up[k] + kill[k] + down[k] s[k-1])`,
    /// `t[k] = (1 + down[k] t[k-1]) / (up[k] + kill[k] + down[k] s[k-1])`,
    ///
    /// (with `s[-1] = t[-1] = 0`), and MTTDL = `sum_k t[k] prod_{j<k} (1 - s[j])`. Without
    /// killing, `s` is 0 and `t[k]` is the textbook `(1 + down[k] t[k-1]) / up[k]`.
    /// Infinite when the loss state cannot be reached.
    pub fn mean_time_to_absorption(&self) -> f64 {
        let mut total = 0.0;
        let mut reach = 1.0; // chance of ever reaching state k from 0
        let (mut s_prev, mut t_prev) = (0.0, 0.0);
        for k in 0..self.up.len() {
            let (u, d, x) = (self.up[k], self.down[k], self.kill[k]);
            let denom = u + x + d * s_prev;
            let s = (x + d * s_prev) / denom;
            let t = (1.0 + d * t_prev) / denom;
            total += reach * t;
            reach *= u / denom; // 1 - s[k], without the subtraction
            s_prev = s;
            t_prev = t;
        }
        total
    }

    /// Probability of having been absorbed by time `t` hours, starting from state 0.
    ///
    /// `exp(Q t)` by scaling and squaring: for a step `h = t / 2^s` with `L h <= 1/2` (L the
    /// largest exit rate), `exp(Q h)` is the uniformized series `sum_j Poisson(L h; j) P^j`
    /// with `P = I + Q/L` non-negative, then squared `s` times. Every term is non-negative, so
    /// small probabilities keep their relative accuracy.
    pub fn absorbed_by(&self, t: f64) -> f64 {
        let m1 = self.up.len(); // transient states 0..m, absorbing state m1
        let size = m1 + 1;
        if t <= 0.0 || m1 == 0 {
            return 0.0;
        }
        let exit: Vec<f64> = (0..m1)
            .map(|k| self.up[k] + self.down[k] + self.kill[k])
            .collect();
        let l = exit.iter().copied().fold(0.0_f64, f64::max);
        if l <= 0.0 {
            return 0.0;
        }
        // P = I + Q/L, dense (size is tiny).
        let mut p = vec![vec![0.0; size]; size];
        for k in 0..m1 {
            p[k][k] = 1.0 - exit[k] / l;
            p[k][k + 1] += self.up[k] / l;
            p[k][m1] += self.kill[k] / l;
            if k > 0 {
                p[k][k - 1] = self.down[k] / l;
            }
        }
        p[m1][m1] = 1.0;

        let lt = l * t;
        let squarings = if lt > 0.5 {
            (lt / 0.5).log2().ceil() as i32
        } else {
            0
        };
        let x = lt / 2f64.powi(squarings); // L h, at most 1/2
        // exp(Q h) = e^{-x} sum_j x^j/j! P^j; stop when the Poisson tail is negligible.
        let mut acc = identity(size);
        let mut term = identity(size);
        let mut weight = 1.0;
        for j in 1..60 {
            term = matmul(&term, &p);
            weight *= x / f64::from(j);
            add_scaled(&mut acc, &term, weight);
            if weight < 1e-20 {
                break;
            }
        }
        let scale = (-x).exp();
        for row in &mut acc {
            for v in row.iter_mut() {
                *v *= scale;
            }
        }
        for _ in 0..squarings {
            acc = matmul(&acc, &acc);
        }
        acc[0][m1].clamp(0.0, 1.0)
    }
}

fn identity(n: usize) -> Vec<Vec<f64>> {
    let mut m = vec![vec![0.0; n]; n];
    for (i, row) in m.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    m
}

fn matmul(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    let mut c = vec![vec![0.0; n]; n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i][k];
            if aik == 0.0 {
                continue;
            }
            for j in 0..n {
                c[i][j] += aik * b[k][j];
            }
        }
    }
    c
}

fn add_scaled(acc: &mut [Vec<f64>], m: &[Vec<f64>], w: f64) {
    for (ra, rm) in acc.iter_mut().zip(m) {
        for (a, v) in ra.iter_mut().zip(rm) {
            *a += w * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn mttdl_of_raid5_matches_the_closed_form() {
        // n = 4, lambda = 1e-5/h, mu = 0.01/h, no URE:
        // MTTDL = (mu + (2n-1) lambda) / (n (n-1) lambda^2) = 0.01007 / 1.2e-9 = 8_391_666.67 h.
        let (n, l, mu) = (4.0, 1e-5, 0.01);
        let c = BirthDeath::new(vec![n * l, (n - 1.0) * l], vec![0.0, mu]);
        assert!(close(
            c.mean_time_to_absorption(),
            8_391_666.666_666_667,
            1e-12
        ));
    }

    #[test]
    fn mttdl_of_raid0_is_one_over_the_total_rate() {
        let c = BirthDeath::new(vec![3.0 * 2e-6], vec![0.0]);
        assert!(close(
            c.mean_time_to_absorption(),
            166_666.666_666_666_7,
            1e-12
        ));
    }

    #[test]
    fn raid0_transient_is_exponential() {
        // Two disks, lambda = 1e-5/h, one year: 1 - e^{-0.1752} = 0.160_710_9.
        let c = BirthDeath::new(vec![2e-5], vec![0.0]);
        let p = c.absorbed_by(8760.0);
        assert!(close(p, 1.0 - (-0.1752f64).exp(), 1e-12), "{p}");
        assert!(close(p, 0.160_710_9, 1e-6), "{p}");
    }

    #[test]
    fn unrepaired_mirror_needs_both_disks_to_fail() {
        // A 2-disk mirror never repaired: (1 - e^{-lambda t})^2; lambda = 1e-4, t = 8760:
        // (1 - e^{-0.876})^2 = 0.583_556^2 = 0.340_538.
        let c = BirthDeath::new(vec![2e-4, 1e-4], vec![0.0, 0.0]);
        let p = c.absorbed_by(8760.0);
        let want = (1.0 - (-0.876f64).exp()).powi(2);
        assert!(close(p, want, 1e-12), "{p} vs {want}");
        assert!(close(p, 0.340_538, 1e-5), "{p}");
    }

    #[test]
    fn repaired_two_state_chain_matches_the_eigenvalue_solution() {
        // Transient generator [[-a, a], [b, -(b + c)]]; survival from state 0 is
        // S(t) = (s1 e^{s2 t} - s2 e^{s1 t}) / (s1 - s2), s1,2 the roots of
        // s^2 + (a + b + c) s + a c = 0.
        let (a, b, c) = (45.0 * 1.8e-6, 1.0 / 79.4, 44.0 * 1.8e-6);
        let chain = BirthDeath::new(vec![a, c], vec![0.0, b]);
        let t = 8760.0;
        let sum = a + b + c;
        let disc = (sum * sum - 4.0 * a * c).sqrt();
        let s2 = (-sum - disc) / 2.0;
        let s1 = a * c / s2; // product of the roots, without the cancellation of -sum + disc
        let survive = (s1 * (s2 * t).exp() - s2 * (s1 * t).exp()) / (s1 - s2);
        let p = chain.absorbed_by(t);
        assert!(close(p, 1.0 - survive, 1e-9), "{p} vs {}", 1.0 - survive);
        // Repair much faster than failure: close to 1 - exp(-t / MTTDL), which ignores that a
        // loss must first wait for a failure and a repair window: off by about (1/mu)/t = 0.9%.
        let approx = 1.0 - (-t / chain.mean_time_to_absorption()).exp();
        assert!(close(p, approx, 0.02), "{p} vs {approx}");
        assert!(p < approx);
    }

    #[test]
    fn killing_matches_the_eigenvalue_solution() {
        // From state 0 a failure (rate a) loses data at once with probability p, else goes to
        // state 1; state 1 repairs at b and loses at c. Transient generator
        // [[-a, a(1-p)], [b, -(b+c)]]: S(t) = alpha e^{s1 t} + (1 - alpha) e^{s2 t}, with s1,2
        // the roots of s^2 + (a+b+c) s + a (c + p b) = 0 and alpha = (-a p - s2) / (s1 - s2)
        // (from S(0) = 1, S'(0) = -a p).
        let (a, b, c, p) = (4.0 * 1e-4, 1.0 / 30.0, 3.0 * 1e-4, 0.3);
        let chain = BirthDeath::with_kill(vec![a * (1.0 - p), c], vec![0.0, b], vec![a * p, 0.0]);
        let t = 8760.0;
        let sum = a + b + c;
        let prod = a * (c + p * b);
        let s2 = (-sum - (sum * sum - 4.0 * prod).sqrt()) / 2.0;
        let s1 = prod / s2;
        let alpha = (-a * p - s2) / (s1 - s2);
        let survive = alpha * (s1 * t).exp() + (1.0 - alpha) * (s2 * t).exp();
        let got = chain.absorbed_by(t);
        assert!(
            close(got, 1.0 - survive, 1e-9),
            "{got} vs {}",
            1.0 - survive
        );
        // And the mean: -(row 0 of A^-1) summed = (b + c + a(1-p)) / (a (c + p b)).
        let mean = (b + c + a * (1.0 - p)) / prod;
        assert!(close(chain.mean_time_to_absorption(), mean, 1e-12));
    }

    #[test]
    fn tiny_probabilities_keep_their_precision() {
        // A 4-way mirror with fast repair: loss needs 4 overlapping failures, P ~ 1e-18 or so.
        let l = 1e-6;
        let mu = 0.1;
        let c = BirthDeath::new(vec![4.0 * l, 3.0 * l, 2.0 * l, l], vec![0.0, mu, mu, mu]);
        let t = 5.0 * 8760.0;
        let p = c.absorbed_by(t);
        let approx = t / c.mean_time_to_absorption();
        assert!(p > 0.0 && close(p, approx, 1e-3), "{p} vs {approx}");
    }
}
