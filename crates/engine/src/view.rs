//! A loaded session as people and the model see it: Pi's tree and `/tree` rows, the context
//! sent to the model and its token counts, search, and the branches bonsai archived.

pub mod archive;
pub mod context;
pub mod search;
pub mod syntax;
pub mod text_width;
pub mod title;
pub mod tokens;
pub mod tree;
pub mod tree_view;
