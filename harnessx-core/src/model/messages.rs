//! [`Messages`]: the conversation a [`ModelRequest`](super::ModelRequest) carries, shared
//! rather than copied.
//!
//! The agent loop sends the whole conversation on every turn. Copying it each time made a turn
//! cost grow with the length of the run; a `Messages` is a reference-counted sequence, so handing
//! it to a model is a pointer copy, and the loop appends to it in place once the model has let
//! go of its copy (copy-on-write: a model or hook that keeps the request keeps what it saw).

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Message;

/// A conversation, cheap to clone: read it as a slice of [`Message`]s.
///
/// Cloning shares the messages. Changing one copy (through [`push`](Self::push),
/// [`extend`](Extend::extend) or a mutable slice) copies the messages first only when another
/// copy is still alive, so the others never see the change. It serializes as a plain array.
///
/// ```
/// use harnessx::{Message, Messages};
/// let mut conversation: Messages = vec![Message::user("hi")].into();
/// let sent = conversation.clone(); // no message is copied
/// conversation.push(Message::assistant("hello"));
/// assert_eq!(sent.len(), 1); // the copy keeps what it was given
/// assert_eq!(conversation.last(), Some(&Message::assistant("hello")));
/// assert!(matches!(&conversation[..], [Message::User { .. }, Message::Assistant { .. }]));
/// assert_eq!(serde_json::to_string(&sent).unwrap(), r#"[{"role":"user","content":"hi"}]"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Messages(Arc<Vec<Message>>);

impl Messages {
    /// An empty conversation.
    ///
    /// ```
    /// assert!(harnessx::Messages::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a message (copying the others first only if another copy shares them).
    ///
    /// ```
    /// let mut messages = harnessx::Messages::new();
    /// messages.push(harnessx::Message::user("hi"));
    /// assert_eq!(messages.len(), 1);
    /// ```
    pub fn push(&mut self, message: Message) {
        Arc::make_mut(&mut self.0).push(message);
    }

    /// The messages as a slice (also what `&messages[..]` and deref give).
    pub fn as_slice(&self) -> &[Message] {
        &self.0
    }

    /// The messages as a vector, without copying them when no other copy shares them.
    ///
    /// ```
    /// use harnessx::{Message, Messages};
    /// let messages = Messages::from(vec![Message::user("hi")]);
    /// assert_eq!(messages.into_vec(), vec![Message::user("hi")]);
    /// ```
    pub fn into_vec(self) -> Vec<Message> {
        Arc::unwrap_or_clone(self.0)
    }
}

impl Deref for Messages {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.0
    }
}

impl DerefMut for Messages {
    /// A mutable slice, copied first when another copy shares the messages.
    fn deref_mut(&mut self) -> &mut [Message] {
        Arc::make_mut(&mut self.0).as_mut_slice()
    }
}

impl AsRef<[Message]> for Messages {
    fn as_ref(&self) -> &[Message] {
        &self.0
    }
}

impl From<Vec<Message>> for Messages {
    fn from(messages: Vec<Message>) -> Self {
        Self(Arc::new(messages))
    }
}

impl From<&[Message]> for Messages {
    fn from(messages: &[Message]) -> Self {
        Self(Arc::new(messages.to_vec()))
    }
}

impl<const N: usize> From<[Message; N]> for Messages {
    fn from(messages: [Message; N]) -> Self {
        Self(Arc::new(messages.into()))
    }
}

impl From<Messages> for Vec<Message> {
    fn from(messages: Messages) -> Self {
        messages.into_vec()
    }
}

impl FromIterator<Message> for Messages {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        Self(Arc::new(iter.into_iter().collect()))
    }
}

impl Extend<Message> for Messages {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, iter: I) {
        Arc::make_mut(&mut self.0).extend(iter);
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Messages {
    type Item = &'a mut Message;
    type IntoIter = std::slice::IterMut<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.deref_mut().iter_mut()
    }
}

impl PartialEq<[Message]> for Messages {
    fn eq(&self, other: &[Message]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<[Message; N]> for Messages {
    fn eq(&self, other: &[Message; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<Vec<Message>> for Messages {
    fn eq(&self, other: &Vec<Message>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Serialize for Messages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_the_messages_and_a_change_copies_them_first() {
        let mut a: Messages = vec![Message::user("one")].into();
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.0, &b.0), "cloning copies no message");
        a.push(Message::user("two"));
        assert_eq!(b.len(), 1, "the other copy keeps what it had");
        assert_eq!(a.len(), 2);
        drop(b);
        let before = Arc::as_ptr(&a.0);
        a.push(Message::user("three"));
        assert_eq!(Arc::as_ptr(&a.0), before, "the sole owner appends in place");
        for m in &mut a {
            if let Message::User { content, .. } = m {
                content.push('!');
            }
        }
        assert_eq!(a[2], Message::user("three!"));
    }

    #[test]
    fn serializes_as_a_plain_array_and_reads_one_back() {
        let messages: Messages = [Message::user("hi"), Message::assistant("yo")].into();
        let text = serde_json::to_string(&messages).unwrap();
        assert_eq!(
            text,
            serde_json::to_string(&messages.clone().into_vec()).unwrap()
        );
        let back: Messages = serde_json::from_str(&text).unwrap();
        assert_eq!(back, messages);
        assert!(serde_json::from_str::<Messages>("{}").is_err());
    }
}
