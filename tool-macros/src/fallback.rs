//! What is emitted when the input is invalid: the function as written (minus the helper
//! attributes rustc would reject), every error, and a stand-in `Tool` impl so that code that
//! registers the tool does not pile up secondary errors.

use proc_macro2::TokenStream;
use quote::quote;
use syn::FnArg;

use crate::expand;
use crate::model::ToolFn;

pub(crate) fn unparsed(item: TokenStream, err: &syn::Error) -> TokenStream {
    let err = err.to_compile_error();
    quote! { #err #item }
}

pub(crate) fn expand(tool: &ToolFn, err: &syn::Error) -> TokenStream {
    let err = err.to_compile_error();
    let function = expand::function(tool);
    // A method (`self`) lives in an `impl` block, where a struct cannot be declared.
    let is_method = tool
        .sig
        .inputs
        .iter()
        .any(|arg| matches!(arg, FnArg::Receiver(_)));
    if is_method {
        return quote! { #err #function };
    }
    let unit = expand::unit_struct(tool);
    let ident = tool.struct_ident();
    quote! {
        #err
        #function
        #unit
        #[allow(unused_variables, unreachable_code, clippy::all)]
        impl ::toolsmith::__private::Tool for #ident {
            fn definition(&self) -> &::toolsmith::__private::ToolDefinition {
                ::core::unreachable!()
            }
            fn call<'__a>(
                &'__a self,
                __arguments: ::toolsmith::__private::Arguments<'__a>,
                __ctx: &'__a ::toolsmith::__private::ToolContext,
            ) -> ::toolsmith::__private::BoxFuture<'__a, ::toolsmith::__private::ToolOutcome> {
                ::core::unreachable!()
            }
        }
    }
}
