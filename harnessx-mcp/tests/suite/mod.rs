//! One module per topic.

mod shared_session;
