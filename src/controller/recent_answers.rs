//! Answers the API server gave admission a moment ago, by what was asked. Jobs come in bursts of
//! one shape from one user, and every question would otherwise be a round trip while the API
//! server waits on our webhook. Answers expire, since RBAC, a LimitRange or an upgrade can change
//! them, and the map stays bounded.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

/// When a question was first asked, and its answer once there is one.
type Entry<V> = (Instant, Arc<OnceCell<V>>);

pub struct RecentAnswers<V> {
    ttl: Duration,
    entries: Mutex<HashMap<String, Entry<V>>>,
}

impl<V: Clone> RecentAnswers<V> {
    pub const CAPACITY: usize = 1024;

    pub fn new(ttl: Duration) -> Self {
        RecentAnswers { ttl, entries: Mutex::default() }
    }

    pub fn get(&self, question: &str) -> Option<V> {
        self.get_at(question, Instant::now())
    }

    pub fn put(&self, question: String, answer: V) {
        self.put_at(question, answer, Instant::now());
    }

    /// The recent answer to `question`, else `ask`'s. Callers that ask the same question while
    /// it is out wait for that one answer: a burst of one shape costs one round trip. A failed
    /// ask is not kept, and the next caller asks again.
    pub async fn get_or_ask<E>(&self, question: String, ask: impl Future<Output = Result<V, E>>) -> Result<V, E> {
        let cell = self.cell(question, Instant::now());
        cell.get_or_try_init(|| ask).await.cloned()
    }

    fn get_at(&self, question: &str, now: Instant) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, answer) = entries.get(question)?;
        (now.saturating_duration_since(*at) < self.ttl).then(|| answer.get().cloned()).flatten()
    }

    fn put_at(&self, question: String, answer: V, now: Instant) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        self.make_room(&mut entries, now);
        entries.insert(question, (now, Arc::new(OnceCell::new_with(Some(answer)))));
    }

    /// The live entry of `question`, answered or not, or a new one asked at `now`.
    fn cell(&self, question: String, now: Instant) -> Arc<OnceCell<V>> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, cell)) = entries.get(&question)
            && now.saturating_duration_since(*at) < self.ttl
        {
            return cell.clone();
        }
        self.make_room(&mut entries, now);
        let cell = Arc::new(OnceCell::new());
        entries.insert(question, (now, cell.clone()));
        cell
    }

    fn make_room(&self, entries: &mut HashMap<String, Entry<V>>, now: Instant) {
        if entries.len() >= Self::CAPACITY {
            entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.ttl);
            if entries.len() >= Self::CAPACITY {
                entries.clear();
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_reused_until_it_expires() {
        let answers = RecentAnswers::new(Duration::from_secs(30));
        let asked = Instant::now();
        answers.put_at("pods ns {}".into(), 1, asked);
        assert_eq!(answers.get_at("pods ns {}", asked + Duration::from_secs(29)), Some(1));
        assert_eq!(answers.get_at("pods other {}", asked), None);
        assert_eq!(answers.get_at("pods ns {}", asked + Duration::from_secs(30)), None, "asked again once expired");
    }

    #[test]
    fn the_map_stays_bounded_and_drops_expired_answers_first() {
        let answers = RecentAnswers::new(Duration::from_secs(30));
        let long_ago = Instant::now();
        let now = long_ago + Duration::from_secs(60);
        answers.put_at("old".into(), 0, long_ago);
        for i in 1..RecentAnswers::<u8>::CAPACITY {
            answers.put_at(format!("q{i}"), 1, now);
        }
        answers.put_at("new".into(), 2, now);
        assert_eq!(answers.len(), RecentAnswers::<u8>::CAPACITY, "the expired answer made room");
        assert_eq!(answers.get_at("q1", now), Some(1), "live answers kept");
        answers.put_at("one more".into(), 3, now);
        assert!(answers.len() <= RecentAnswers::<u8>::CAPACITY);
    }

    #[tokio::test]
    async fn a_burst_of_one_question_is_asked_once_and_a_failure_is_asked_again() {
        let answers = RecentAnswers::new(Duration::from_secs(30));
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let ask = |answer: Result<u8, &'static str>| {
            let asked = &asked;
            async move {
                asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::task::yield_now().await;
                answer
            }
        };
        let burst = (0..5).map(|_| answers.get_or_ask("q".into(), ask(Ok(7))));
        assert_eq!(futures::future::join_all(burst).await, [Ok(7); 5]);
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1, "the askers in flight shared one answer");

        assert_eq!(answers.get_or_ask("down".into(), ask(Err("refused"))).await, Err("refused"));
        assert_eq!(answers.get_or_ask("down".into(), ask(Ok(1))).await, Ok(1), "a failure is not kept");
        assert_eq!(answers.get("down"), Some(1));
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 3);
    }
}
