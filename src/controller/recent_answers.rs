//! Answers the API server gave admission a moment ago, by what was asked. Jobs come in bursts of
//! one shape from one user, and every question would otherwise be a round trip while the API
//! server waits on our webhook. Answers expire, since RBAC, a LimitRange or an upgrade can change
//! them, and the map stays bounded.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub struct RecentAnswers<V> {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, V)>>,
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

    fn get_at(&self, question: &str, now: Instant) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, answer) = entries.get(question)?;
        (now.saturating_duration_since(*at) < self.ttl).then(|| answer.clone())
    }

    fn put_at(&self, question: String, answer: V, now: Instant) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= Self::CAPACITY {
            entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.ttl);
            if entries.len() >= Self::CAPACITY {
                entries.clear();
            }
        }
        entries.insert(question, (now, answer));
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
}
