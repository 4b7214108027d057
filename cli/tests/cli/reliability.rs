//! The contract of docs/reliability.md, tried as a hostile user would (issue 21): sizes
//! beyond memory, files that are not what they seem, messages, exit statuses, and the
//! option parser under random argument vectors. Every test runs without a GPU.

mod files;
mod limits;
mod messages;
mod numbers;
mod parse;
mod results;
