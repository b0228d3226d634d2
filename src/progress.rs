//! Progress with an ETA on a terminal; silent when piped.
