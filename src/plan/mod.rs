//! `iolab plan`: capacity, predicted performance and the risk of losing data, as pure functions.
