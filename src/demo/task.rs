//! The demo's synthetic task: running sums with two notations for the same reasoning.
//!
//! A prompt lists a few small numbers, ` add 3 5 2 =`. The answer adds them one step (one
//! paragraph) at a time, in either of two notations:
//!
//! ```text
//! plain      " plus 5 is 8 .\n\n"   five tokens a step; both models know it
//! shorthand  " 5 8 ;\n\n"           three tokens a step; only the senior's base learned it
//! ```
//!
//! and ends with ` answer 10` and EOS. Every token is a word (its text starts with a
//! space), so every token is a handoff point of the word schedule, and every step ends a
//! paragraph, so the evaluation's step alternation hands off once per step.
//!
//! Responses are cut at [`SumTask::max_new_tokens`]: a plain chain of the longest sums
//! does not fit, a shorthand one does, and so does a chain whose senior writes shorthand
//! while the junior writes plain every other step. The shorthand thus buys accuracy, not
//! only length, and a base that mixes the notations gets the longest sums wrong often.
//! A correct answer (the last `answer` equals the sum) also earns 1 minus a small cost per
//! token, a wrong one 0.
//!
//! Every problem belongs to one split by a hash of its numbers, so held-out problems are
//! never trained on, whatever the seeds and counts.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use trlvr::data::arithmetic::Split;
use trlvr::token::TokenId;
use trlvr::verifier::{Reward, Verifier};
use trlvr::vocab::TokenClasses;
use trlvr::{Error, Result};

/// The end-of-sequence id (also the padding id).
pub const EOS: TokenId = 0;
const ADD: TokenId = 1;
const EQUALS: TokenId = 2;
const PLUS: TokenId = 3;
const IS: TokenId = 4;
/// Ends a plain step (and its paragraph).
const PLAIN_END: TokenId = 5;
/// Ends a shorthand step (and its paragraph).
const SHORT_END: TokenId = 6;
const ANSWER: TokenId = 7;
/// Id of the number 0; number `n` is `NUMBER0 + n`.
const NUMBER0: TokenId = 8;

/// How a step is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Notation {
    /// ` plus x is s .` (both models).
    Plain,
    /// ` x s ;` (the senior's base only).
    Shorthand,
}

/// The task's shape: how many numbers, how large, the response cap and the length cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SumTask {
    /// Fewest numbers in a prompt (at least 2).
    pub min_terms: usize,
    /// Most numbers in a prompt.
    pub max_terms: usize,
    /// Largest number in a prompt (smallest is 1).
    pub max_term: usize,
    /// Responses are cut after this many tokens, in training and evaluation alike.
    pub max_new_tokens: usize,
    /// Reward subtracted per response token (soft length pressure).
    pub token_cost: f32,
    /// One problem in this many is held out (never trained on).
    pub held_out_every: u64,
}

impl Default for SumTask {
    /// Four to eight numbers, cut at 30 tokens: a plain chain fits up to six numbers,
    /// a shorthand one always, and so does a handoff chain with a shorthand senior.
    fn default() -> Self {
        Self {
            min_terms: 4,
            max_terms: 8,
            max_term: 9,
            max_new_tokens: 30,
            token_cost: 0.01,
            held_out_every: 8,
        }
    }
}

/// One problem: the numbers to add.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Problem {
    /// The numbers, in order.
    pub terms: Vec<usize>,
}

impl Problem {
    /// Their sum, the reference answer.
    pub fn sum(&self) -> usize {
        self.terms.iter().sum()
    }
}

impl SumTask {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::Config`] for fewer than 2 terms, an empty range, a cap that no chain fits
    /// in, a bad cost or split.
    pub fn validate(&self) -> Result<()> {
        if self.min_terms < 2 || self.max_terms < self.min_terms || self.max_term == 0 {
            return Err(Error::Config(format!(
                "need 2 <= min_terms <= max_terms and max_term >= 1, got {self:?}"
            )));
        }
        if self.max_new_tokens < chain_tokens(self.min_terms, 0) {
            return Err(Error::Config(format!(
                "max_new_tokens {} is shorter than the shortest chain ({} tokens)",
                self.max_new_tokens,
                chain_tokens(self.min_terms, 0)
            )));
        }
        if !(self.token_cost.is_finite() && self.token_cost >= 0.0) {
            return Err(Error::Config(format!("token_cost must be >= 0, got {}", self.token_cost)));
        }
        if self.held_out_every < 2 {
            return Err(Error::Config(format!(
                "held_out_every must be at least 2, got {}",
                self.held_out_every
            )));
        }
        Ok(())
    }

    /// The largest number any chain writes.
    pub fn max_number(&self) -> usize {
        self.max_terms * self.max_term
    }

    /// The vocabulary size.
    pub fn vocab_size(&self) -> usize {
        NUMBER0 as usize + self.max_number() + 1
    }

    /// The text of every id, in id order (EOS is `<eos>`).
    pub fn token_texts(&self) -> Vec<String> {
        let mut texts: Vec<String> =
            ["<eos>", " add", " =", " plus", " is", " .\n\n", " ;\n\n", " answer"].map(String::from).into();
        texts.extend((0..=self.max_number()).map(|n| format!(" {n}")));
        texts
    }

    /// Word starts, paragraph ends and EOS of the vocabulary.
    ///
    /// # Errors
    /// Never in practice (the vocabulary is well-formed).
    pub fn classes(&self) -> Result<TokenClasses> {
        TokenClasses::from_texts(&self.token_texts(), &[EOS])
    }

    /// The text of `ids` (EOS and unknown ids write nothing).
    pub fn text(&self, ids: &[TokenId]) -> String {
        let texts = self.token_texts();
        ids.iter()
            .filter(|&&id| id != EOS)
            .filter_map(|&id| texts.get(id as usize))
            .map(String::as_str)
            .collect()
    }

    /// The split `problem` belongs to: by an FNV-1a hash of its numbers.
    pub fn split_of(&self, problem: &Problem) -> Split {
        let hash = trlvr::data::fnv1a(problem.terms.iter().flat_map(|&t| (t as u32).to_le_bytes()));
        // The top bits: FNV's low bits mix poorly.
        if (hash >> 32) % self.held_out_every == 0 { Split::Validation } else { Split::Train }
    }

    /// `count` problems of `split` drawn from `seed`: training problems may repeat, held-out
    /// ones are distinct (in the order drawn).
    ///
    /// # Errors
    /// [`Error::Config`] when the held-out split has fewer than `count` problems.
    pub fn problems(&self, split: Split, count: usize, seed: u64) -> Result<Vec<Problem>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(count);
        let mut draws = 0usize;
        while out.len() < count {
            draws += 1;
            if draws > 1000 * count.max(1000) {
                return Err(Error::Config(format!(
                    "the {split:?} split holds only about {} distinct problems; asked for {count}",
                    out.len()
                )));
            }
            let n = rng.random_range(self.min_terms..=self.max_terms);
            let problem = Problem { terms: (0..n).map(|_| rng.random_range(1..=self.max_term)).collect() };
            if self.split_of(&problem) != split
                || (split == Split::Validation && !seen.insert(problem.clone()))
            {
                continue;
            }
            out.push(problem);
        }
        Ok(out)
    }

    /// The prompt's ids: ` add t1 t2 ... =`.
    pub fn prompt(&self, problem: &Problem) -> Vec<TokenId> {
        let mut ids = vec![ADD];
        ids.extend(problem.terms.iter().map(|&t| number(t)));
        ids.push(EQUALS);
        ids
    }

    /// A correct response, step `k` written in `notations[k]` (the last notation repeats
    /// when there are fewer), ending with EOS.
    pub fn chain(&self, problem: &Problem, notations: &[Notation]) -> Vec<TokenId> {
        let mut ids = Vec::new();
        let mut sum = problem.terms[0];
        for (k, &term) in problem.terms[1..].iter().enumerate() {
            sum += term;
            let notation = notations.get(k).or(notations.last()).copied().unwrap_or(Notation::Plain);
            match notation {
                Notation::Plain => ids.extend([PLUS, number(term), IS, number(sum), PLAIN_END]),
                Notation::Shorthand => ids.extend([number(term), number(sum), SHORT_END]),
            }
        }
        ids.extend([ANSWER, number(sum), EOS]);
        ids
    }

    /// A correct response with each step in shorthand with probability `p_shorthand`.
    pub fn mixed_chain(&self, problem: &Problem, p_shorthand: f64, rng: &mut impl Rng) -> Vec<TokenId> {
        let notations: Vec<Notation> = (1..problem.terms.len())
            .map(|_| if rng.random_bool(p_shorthand) { Notation::Shorthand } else { Notation::Plain })
            .collect();
        self.chain(problem, &notations)
    }

    /// The verifier of this task (the reward includes the length cost).
    pub fn verifier(&self) -> SumVerifier {
        SumVerifier { token_cost: self.token_cost }
    }
}

/// Tokens of a correct chain over `terms` numbers with `shorthand` of its steps in
/// shorthand: five a plain step, three a shorthand one, then ` answer N` and EOS.
pub fn chain_tokens(terms: usize, shorthand: usize) -> usize {
    let steps = terms.saturating_sub(1);
    5 * (steps - shorthand.min(steps)) + 3 * shorthand.min(steps) + 3
}

fn number(n: usize) -> TokenId {
    NUMBER0 + n as TokenId
}

/// Counts steps by notation in a response's ids: (plain, shorthand).
pub fn notation_counts(ids: &[TokenId]) -> (usize, usize) {
    let plain = ids.iter().filter(|&&t| t == PLAIN_END).count();
    let short = ids.iter().filter(|&&t| t == SHORT_END).count();
    (plain, short)
}

/// Grades a running-sum response: correct when the last ` answer N` has N equal to the
/// reference; the reward is `1 - token_cost * tokens` when correct, else 0.
#[derive(Debug, Clone, Copy)]
pub struct SumVerifier {
    /// Cost per token (word) of the response.
    pub token_cost: f32,
}

impl Verifier for SumVerifier {
    fn verify(&self, response: &str, reference: &str) -> Reward {
        let words: Vec<&str> = response.split_whitespace().collect();
        let answer = words.iter().rposition(|&w| w == "answer").and_then(|i| words.get(i + 1));
        let correct = answer.is_some_and(|a| *a == reference.trim());
        let tokens = response.split(' ').filter(|w| !w.is_empty()).count();
        Reward {
            value: if correct { (1.0 - self.token_cost * tokens as f32).max(0.0) } else { 0.0 },
            correct,
            reason: match answer {
                None => "no answer".into(),
                Some(a) if correct => format!("answer {a} is right"),
                Some(a) => format!("answer {a} is wrong"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_notations_are_correct_and_shorthand_is_shorter() {
        let task = SumTask::default();
        let verifier = task.verifier();
        for problem in task.problems(Split::Train, 20, 3).unwrap() {
            let reference = problem.sum().to_string();
            let plain = task.chain(&problem, &[Notation::Plain]);
            let short = task.chain(&problem, &[Notation::Shorthand]);
            assert!(short.len() < plain.len());
            let (rp, rs) = (
                verifier.verify(&task.text(&plain), &reference),
                verifier.verify(&task.text(&short), &reference),
            );
            assert!(rp.correct && rs.correct, "{}", task.text(&plain));
            assert!(rs.value > rp.value, "the length cost favours shorthand");
            assert_eq!(notation_counts(&plain), (problem.terms.len() - 1, 0));
            assert_eq!(notation_counts(&short), (0, problem.terms.len() - 1));
            assert!(
                plain.len() <= chain_tokens(task.max_terms, 0),
                "no chain is longer than the longest plain one"
            );
            assert_eq!(plain.len(), chain_tokens(problem.terms.len(), 0));
            assert_eq!(short.len(), chain_tokens(problem.terms.len(), problem.terms.len() - 1));
        }
    }

    /// The cap is what makes shorthand buy accuracy: plain fits up to six numbers only;
    /// shorthand, and a handoff chain whose senior writes shorthand, fit every problem.
    #[test]
    fn the_cap_cuts_plain_chains_of_long_sums_only() {
        let task = SumTask::default();
        task.validate().unwrap();
        let fits = |terms, shorthand| chain_tokens(terms, shorthand) <= task.max_new_tokens;
        for terms in task.min_terms..=task.max_terms {
            let steps = terms - 1;
            assert_eq!(fits(terms, 0), terms <= 6, "{terms} plain");
            assert!(fits(terms, steps), "{terms} shorthand");
            // Step alternation, senior first: the senior writes ceil(steps / 2).
            assert!(fits(terms, steps.div_ceil(2)), "{terms} handoff");
        }
        let mut bad = task.clone();
        bad.max_new_tokens = 10;
        assert!(bad.validate().unwrap_err().to_string().contains("shortest chain"));
    }

    /// Held-out problems are never drawn for training, whatever the seeds.
    #[test]
    fn held_out_problems_are_disjoint_from_training_ones() {
        let task = SumTask::default();
        let held: std::collections::HashSet<Problem> =
            task.problems(Split::Validation, 500, 9).unwrap().into_iter().collect();
        assert_eq!(held.len(), 500, "distinct");
        let train = task.problems(Split::Train, 20_000, 1).unwrap();
        assert!(train.iter().all(|p| !held.contains(p)));
        // About one problem in eight of the space is held out.
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let held_share = (0..8000)
            .map(|_| Problem { terms: (0..5).map(|_| rng.random_range(1..=9)).collect() })
            .filter(|p| task.split_of(p) == Split::Validation)
            .count() as f64
            / 8000.0;
        assert!((held_share - 0.125).abs() < 0.02, "{held_share}");
        // A tiny space runs dry with a clear error.
        let tiny = SumTask { min_terms: 2, max_terms: 2, max_term: 2, ..SumTask::default() };
        assert!(tiny.problems(Split::Validation, 50, 0).unwrap_err().to_string().contains("distinct"));
    }

    #[test]
    fn wrong_or_missing_answers_fail() {
        let v = SumVerifier { token_cost: 0.0 };
        assert!(!v.verify(" plus 2 is 5 .\n\n answer 6", "5").correct);
        assert!(!v.verify(" plus 2 is 5 .\n\n", "5").correct);
        assert!(v.verify(" answer 4 answer 5", "5").correct, "the last answer counts");
        let cost = SumVerifier { token_cost: 0.01 };
        assert_eq!(cost.verify(" answer 6", "5").value, 0.0, "a wrong answer costs nothing extra");
        assert!((cost.verify(" answer 5", "5").value - 0.98).abs() < 1e-6);
    }

    #[test]
    fn every_token_is_a_word_and_every_step_a_paragraph() {
        let task = SumTask::default();
        let classes = task.classes().unwrap();
        assert_eq!(classes.vocab_size(), task.vocab_size());
        for id in 1..task.vocab_size() as TokenId {
            assert!(classes.is_word_start(id), "{id}");
        }
        assert!(classes.is_eos(EOS));
        assert_eq!(classes.newlines(PLAIN_END).0, 2);
        assert_eq!(classes.newlines(SHORT_END).0, 2);
        let problem = Problem { terms: vec![3, 5, 2] };
        assert_eq!(task.text(&task.prompt(&problem)), " add 3 5 2 =");
        assert_eq!(
            task.text(&task.chain(&problem, &[Notation::Shorthand, Notation::Plain])),
            " 5 8 ;\n\n plus 2 is 10 .\n\n answer 10"
        );
    }
}
