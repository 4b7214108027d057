//! `#[kernel]` and `instances!`: each GPU kernel's parameter list is written once, on
//! its body function in `ferrocuda-kernels`, and both sides come from it.
//!
//! * On `nvptx64` the body stays an `#[inline(always)]` function and the entry points
//!   (`extern "ptx-kernel"`) are generated: directly for a non-generic body, per
//!   instance for a generic one.
//! * On the host the body disappears and a launch-arguments struct takes its place, one
//!   named field per parameter in order (`*const T` becomes `In<'a, T>`, `*mut T` becomes
//!   `Out<'a, T>`, everything else stays), with an `unsafe impl Signature` that lists the
//!   parameter sizes. The typed handle `Kernel<Args>` of each entry point names it, so a
//!   launch with a missing, extra or mistyped argument does not compile.
//!
//! A generic body gets its instances from `instances!`, which writes each instance's
//! name once: the device entry point and the host handle (a constant, or an associated
//! constant of a trait the host code dispatches on) come from the same line.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::visit_mut::VisitMut;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, GenericParam, Ident, ItemFn, Pat, Token, Type,
    TypeParamBound, Visibility, parse_macro_input, parse_quote,
};

/// Declares a kernel body. Arguments (optional): `args = Name` to choose the host
/// struct's name (default: the function name in CamelCase).
///
/// A non-generic body is itself the entry point (named like the function) and its host
/// handle is the constant `FN_NAME` (upper case). A generic body needs `instances!`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = parse_macro_input!(attr as KernelAttr);
    let func = parse_macro_input!(item as ItemFn);
    match expand_kernel(attr, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Instances of generic kernel bodies, each named once:
///
/// ```text
/// instances! {
///     impl SpmvKernels<f64> for f64 {
///         BCSR5_RM = bcsr::<f64, f64, 5, false>("spmv_bcsr5_rm_f64");
///     }
///     pub const FILL_U32 = fill::<u32>("fill_u32");
/// }
/// ```
///
/// On the device each line becomes an `extern "ptx-kernel"` entry point with that
/// name; on the host an (associated) constant `Kernel<Args<'static, ..>>`. The bodies
/// must be in scope where `instances!` is used (same module, or `use super::*`).
#[proc_macro]
pub fn instances(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as InstanceBlocks);
    expand_instances(input).into()
}

struct KernelAttr {
    args: Option<Ident>,
}

impl Parse for KernelAttr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.is_empty() {
            return Ok(KernelAttr { args: None });
        }
        let key: Ident = input.parse()?;
        if key != "args" {
            return Err(syn::Error::new(key.span(), "expected `args = Name`"));
        }
        input.parse::<Token![=]>()?;
        Ok(KernelAttr {
            args: Some(input.parse()?),
        })
    }
}

/// `abc_def2` -> `AbcDef2`.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// One kernel parameter.
struct Param {
    name: Ident,
    ty: Type,
}

/// Rewrites `T::Assoc` (T a type parameter) to `<T as FirstBound>::Assoc`, so that the
/// path stays valid where `T` is an alias of a concrete type (the generated entry points).
struct QualifyAssoc<'a> {
    bounds: &'a [(Ident, Option<syn::Path>)],
}

impl VisitMut for QualifyAssoc<'_> {
    fn visit_type_path_mut(&mut self, tp: &mut syn::TypePath) {
        if tp.qself.is_none() && tp.path.segments.len() >= 2 {
            let first = &tp.path.segments[0].ident;
            if let Some((_, Some(bound))) = self.bounds.iter().find(|(g, _)| g == first) {
                let rest: Punctuated<syn::PathSegment, Token![::]> =
                    tp.path.segments.iter().skip(1).cloned().collect();
                let first = first.clone();
                *tp = parse_quote!(<#first as #bound>::#rest);
            }
        }
        syn::visit_mut::visit_type_path_mut(self, tp);
    }
}

/// Replaces lifetime `'from` by `'to` (`'_` -> `'a` in host struct fields, `'a` ->
/// `'static` where the parameter sizes are taken).
struct RenameLifetime(&'static str, &'static str);

impl VisitMut for RenameLifetime {
    fn visit_lifetime_mut(&mut self, l: &mut syn::Lifetime) {
        if l.ident == self.0 {
            *l = syn::Lifetime::new(self.1, l.span());
        }
    }
}

/// Whether a type mentions `ident` as a path segment or lifetime.
fn mentions(ty: &Type, ident: &str) -> bool {
    struct Find<'a>(&'a str, bool);
    impl<'ast> syn::visit::Visit<'ast> for Find<'_> {
        fn visit_ident(&mut self, i: &'ast Ident) {
            if i == self.0 {
                self.1 = true;
            }
        }
        fn visit_lifetime(&mut self, l: &'ast syn::Lifetime) {
            if l.ident == self.0 {
                self.1 = true;
            }
        }
    }
    let mut f = Find(ident, false);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.1
}

/// The host type of a kernel parameter and whether it borrows device memory.
fn host_type(ty: &Type) -> (Type, bool) {
    let abi = quote!(::ferrocuda_kernels::abi);
    match ty {
        Type::Ptr(p) => {
            let elem = &p.elem;
            if p.mutability.is_some() {
                (parse_quote!(#abi::Out<'a, #elem>), true)
            } else {
                (parse_quote!(#abi::In<'a, #elem>), true)
            }
        }
        other => {
            let mut t = other.clone();
            RenameLifetime("_", "'a").visit_type_mut(&mut t);
            let borrows = mentions(&t, "a");
            (t, borrows)
        }
    }
}

fn expand_kernel(attr: KernelAttr, mut func: ItemFn) -> syn::Result<Tokens> {
    let sig = &func.sig;
    if sig.unsafety.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            "a kernel body must be an `unsafe fn` (it dereferences raw device pointers)",
        ));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new_spanned(
            &sig.output,
            "a kernel returns nothing",
        ));
    }
    let fn_name = sig.ident.clone();
    let args_name = attr
        .args
        .unwrap_or_else(|| Ident::new(&camel(&fn_name.to_string()), fn_name.span()));

    // Generics: type parameters (with their first trait bound) and const parameters.
    let mut type_params: Vec<(Ident, Vec<TypeParamBound>)> = Vec::new();
    let mut const_params: Vec<(Ident, Type)> = Vec::new();
    for g in &sig.generics.params {
        match g {
            GenericParam::Type(t) => {
                type_params.push((t.ident.clone(), t.bounds.iter().cloned().collect()))
            }
            GenericParam::Const(c) => const_params.push((c.ident.clone(), c.ty.clone())),
            GenericParam::Lifetime(l) => {
                return Err(syn::Error::new_spanned(
                    l,
                    "a kernel takes no lifetime parameters (use `'_` in parameter types)",
                ));
            }
        }
    }
    if let Some(w) = &sig.generics.where_clause {
        return Err(syn::Error::new_spanned(
            w,
            "put a kernel's bounds on its parameters, not in a where clause",
        ));
    }
    let first_bounds: Vec<(Ident, Option<syn::Path>)> = type_params
        .iter()
        .map(|(id, bounds)| {
            let first = bounds.iter().find_map(|b| match b {
                TypeParamBound::Trait(t) => Some(t.path.clone()),
                _ => None,
            });
            (id.clone(), first)
        })
        .collect();

    let mut params = Vec::new();
    for arg in &sig.inputs {
        let FnArg::Typed(pt) = arg else {
            return Err(syn::Error::new_spanned(arg, "a kernel has no `self`"));
        };
        let Pat::Ident(pi) = pt.pat.as_ref() else {
            return Err(syn::Error::new_spanned(
                &pt.pat,
                "kernel parameters are plain names",
            ));
        };
        let mut ty = (*pt.ty).clone();
        QualifyAssoc {
            bounds: &first_bounds,
        }
        .visit_type_mut(&mut ty);
        params.push(Param {
            name: pi.ident.clone(),
            ty,
        });
    }

    // Host struct: fields, generics that the fields use, bounds of those generics.
    let mut fields = Vec::new();
    let mut borrows = false;
    for p in &params {
        let (t, b) = host_type(&p.ty);
        borrows |= b;
        fields.push((p.name.clone(), t));
    }
    let used: Vec<&(Ident, Vec<TypeParamBound>)> = type_params
        .iter()
        .filter(|(id, _)| fields.iter().any(|(_, t)| mentions(t, &id.to_string())))
        .collect();
    let used_names: Vec<&Ident> = used.iter().map(|(id, _)| id).collect();
    // Bounds that mention only used parameters (a bound on an unused one cannot be named).
    let struct_bounds: Vec<Tokens> = used
        .iter()
        .map(|(id, bounds)| {
            let keep: Vec<&TypeParamBound> = bounds
                .iter()
                .filter(|b| {
                    type_params.iter().all(|(other, _)| {
                        used_names.contains(&other) || !bound_mentions(b, &other.to_string())
                    })
                })
                .collect();
            if keep.is_empty() {
                quote!(#id)
            } else {
                quote!(#id: #(#keep)+*)
            }
        })
        .collect();
    let life = if borrows { quote!('a,) } else { quote!() };
    let struct_generics = quote!(<#life #(#struct_bounds),*>);
    let impl_generics = quote!(<#(#struct_bounds),*>);
    let static_args = if borrows {
        quote!(#args_name<'static, #(#used_names),*>)
    } else {
        quote!(#args_name<#(#used_names),*>)
    };
    let a_args = if borrows {
        quote!(#args_name<'a, #(#used_names),*>)
    } else {
        quote!(#args_name<#(#used_names),*>)
    };

    let docs: Vec<&Attribute> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let field_defs = fields.iter().map(|(n, t)| {
        let doc = format!("Parameter `{n}`.");
        quote!(#[doc = #doc] pub #n: #t)
    });
    let field_names: Vec<&Ident> = fields.iter().map(|(n, _)| n).collect();
    let param_infos = fields.iter().map(|(n, t)| {
        let name = n.to_string();
        let mut t = t.clone();
        RenameLifetime("a", "'static").visit_type_mut(&mut t);
        quote!(::ferrocuda_kernels::abi::Param::of::<#t>(#name))
    });
    let struct_doc = format!(
        "Launch arguments of the kernel body `{fn_name}`: one field per parameter, in order."
    );
    let abi = quote!(::ferrocuda_kernels::abi);
    let host = quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #(#docs)*
        #[doc = ""]
        #[doc = #struct_doc]
        pub struct #args_name #struct_generics {
            #(#field_defs,)*
        }

        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the field list is the kernel's parameter list, generated from the same
        // declaration; `with_params` passes a pointer to each field in that order.
        unsafe impl #impl_generics #abi::Signature for #static_args {
            type Args<'a> = #a_args;
            const PARAMS: &'static [#abi::Param] = &[#(#param_infos),*];
        }

        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: as above.
        unsafe impl<#life #(#struct_bounds),*> #abi::KernelArgs for #a_args {
            fn with_params<__R>(
                mut self,
                f: impl FnOnce(&mut [*mut ::core::ffi::c_void]) -> __R,
            ) -> __R {
                f(&mut [#((&raw mut self.#field_names).cast::<::core::ffi::c_void>()),*])
            }
        }
    };

    let param_decls: Vec<Tokens> = params
        .iter()
        .map(|p| {
            let (n, t) = (&p.name, &p.ty);
            quote!(#n: #t)
        })
        .collect();
    let param_names: Vec<&Ident> = params.iter().map(|p| &p.name).collect();
    let body = &func.block;
    let vis = &func.vis;

    if type_params.is_empty() && const_params.is_empty() {
        // The body is the entry point.
        let handle = format_ident!("{}", fn_name.to_string().to_uppercase());
        let name = fn_name.to_string();
        let attrs = &func.attrs;
        let handle_doc = format!("Handle of the kernel `{name}`.");
        return Ok(quote! {
            #[cfg(target_arch = "nvptx64")]
            #(#attrs)*
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            #vis unsafe extern "ptx-kernel" fn #fn_name(#(#param_decls),*) #body

            #host

            #[cfg(not(target_arch = "nvptx64"))]
            #[doc = #handle_doc]
            // SAFETY: the name and the arguments come from the same declaration.
            pub const #handle: #abi::Kernel<#static_args> =
                unsafe { #abi::Kernel::new(#name, module_path!()) };

            #[cfg(not(target_arch = "nvptx64"))]
            const _: () = {
                #[#abi::linkme::distributed_slice(#abi::KERNELS)]
                #[linkme(crate = #abi::linkme)]
                static KERNEL: #abi::KernelInfo = #abi::KernelInfo::of::<#static_args>(#name, module_path!());
            };
        });
    }

    // Generic body: keep it for the device, and a macro that instantiates it.
    if !func.attrs.iter().any(|a| a.path().is_ident("inline")) {
        func.attrs.push(parse_quote!(#[inline(always)]));
    }
    func.attrs
        .push(parse_quote!(#[allow(clippy::too_many_arguments)]));
    let macro_name = format_ident!("__kernel_{}", fn_name);
    let mut metas = Vec::new();
    let mut aliases = Vec::new();
    let mut generic_idents = Vec::new();
    for g in &sig.generics.params {
        match g {
            GenericParam::Type(t) => {
                let id = &t.ident;
                let m = format_ident!("{}", id);
                metas.push(quote!($#m:ty));
                aliases.push(quote!(type #id = $#m;));
                generic_idents.push(id.clone());
            }
            GenericParam::Const(c) => {
                let (id, ty) = (&c.ident, &c.ty);
                let m = format_ident!("{}", id);
                metas.push(quote!($#m:expr));
                aliases.push(quote!(const #id: #ty = $#m;));
                generic_idents.push(id.clone());
            }
            GenericParam::Lifetime(_) => unreachable!("rejected above"),
        }
    }
    let handle_args: Vec<Tokens> = used_names
        .iter()
        .map(|id| {
            let m = format_ident!("{}", id);
            quote!($#m)
        })
        .collect();
    let static_macro_args = if borrows {
        quote!(#args_name<'static, #(#handle_args),*>)
    } else {
        quote!(#args_name<#(#handle_args),*>)
    };
    let dollar_name = quote!($name);
    let macro_def = quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #macro_name {
            (@entry #dollar_name:expr; #(#metas),*) => {
                const _: () = {
                    #(#aliases)*
                    #[unsafe(export_name = #dollar_name)]
                    #[allow(clippy::too_many_arguments)]
                    unsafe extern "ptx-kernel" fn entry(#(#param_decls),*) {
                        unsafe { #fn_name::<#(#generic_idents),*>(#(#param_names),*) }
                    }
                };
            };
            (@args #(#metas),*) => { #static_macro_args };
        }
    };
    // The device body (the only place its generics and parameters are written).
    func.attrs
        .insert(0, parse_quote!(#[cfg(target_arch = "nvptx64")]));
    Ok(quote! {
        #func
        #host
        #macro_def
    })
}

fn bound_mentions(b: &TypeParamBound, ident: &str) -> bool {
    let ty: Type = parse_quote!(dyn #b);
    mentions(&ty, ident)
}

/// `NAME = body::<args>(name_expr);`
struct Instance {
    vis: Visibility,
    constant: Ident,
    body: Ident,
    generics: Vec<GenericArgument>,
    name: Expr,
}

impl Parse for Instance {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let vis: Visibility = input.parse()?;
        if input.peek(Token![const]) {
            input.parse::<Token![const]>()?;
        }
        let constant: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let body: Ident = input.parse()?;
        let mut generics = Vec::new();
        if input.peek(Token![::]) {
            input.parse::<Token![::]>()?;
            let args: syn::AngleBracketedGenericArguments = input.parse()?;
            generics = args.args.into_iter().collect();
        }
        let content;
        syn::parenthesized!(content in input);
        let name: Expr = content.parse()?;
        input.parse::<Token![;]>()?;
        Ok(Instance {
            vis,
            constant,
            body,
            generics,
            name,
        })
    }
}

enum InstanceBlock {
    /// `impl Trait for Type { ... }`: associated constants.
    Impl {
        header: Tokens,
        items: Vec<Instance>,
    },
    /// A free constant.
    Free(Box<Instance>),
}

struct InstanceBlocks(Vec<InstanceBlock>);

impl Parse for InstanceBlocks {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut blocks = Vec::new();
        while !input.is_empty() {
            if input.peek(Token![impl]) {
                let mut header = Tokens::new();
                while !input.peek(syn::token::Brace) {
                    let tt: proc_macro2::TokenTree = input.parse()?;
                    header.extend([tt]);
                }
                let content;
                syn::braced!(content in input);
                let mut items = Vec::new();
                while !content.is_empty() {
                    items.push(content.parse()?);
                }
                blocks.push(InstanceBlock::Impl { header, items });
            } else {
                blocks.push(InstanceBlock::Free(Box::new(input.parse()?)));
            }
        }
        Ok(InstanceBlocks(blocks))
    }
}

fn expand_instances(input: InstanceBlocks) -> Tokens {
    let abi = quote!(::ferrocuda_kernels::abi);
    let mut device = Tokens::new();
    // Host items, each under its own `cfg` (an attribute covers one item).
    let mut host: Vec<Tokens> = Vec::new();
    let entry = |inst: &Instance| {
        let mac = format_ident!("__kernel_{}", inst.body);
        let (name, g) = (&inst.name, &inst.generics);
        quote!(#mac!(@entry #name; #(#g),*);)
    };
    let handle = |inst: &Instance| {
        let mac = format_ident!("__kernel_{}", inst.body);
        let g = &inst.generics;
        quote!(#abi::Kernel<#mac!(@args #(#g),*)>)
    };
    let register = |inst: &Instance| {
        let mac = format_ident!("__kernel_{}", inst.body);
        let (name, g) = (&inst.name, &inst.generics);
        quote! {
            const _: () = {
                #[#abi::linkme::distributed_slice(#abi::KERNELS)]
                #[linkme(crate = #abi::linkme)]
                static KERNEL: #abi::KernelInfo =
                    #abi::KernelInfo::of::<#mac!(@args #(#g),*)>(#name, module_path!());
            };
        }
    };
    let value = |inst: &Instance| {
        let name = &inst.name;
        // SAFETY: the name and the arguments come from the same instance line.
        quote!(unsafe { #abi::Kernel::new(#name, module_path!()) })
    };
    for block in &input.0 {
        match block {
            InstanceBlock::Impl { header, items } => {
                let consts = items.iter().map(|inst| {
                    let (c, h, v) = (&inst.constant, handle(inst), value(inst));
                    quote!(const #c: #h = #v;)
                });
                host.push(quote!(#header { #(#consts)* }));
                for inst in items {
                    device.extend(entry(inst));
                    host.push(register(inst));
                }
            }
            InstanceBlock::Free(inst) => {
                let (vis, c, h, v) = (&inst.vis, &inst.constant, handle(inst), value(inst));
                let doc = format!("Handle of the kernel instance `{}`.", c);
                host.push(quote!(#[doc = #doc] #vis const #c: #h = #v;));
                device.extend(entry(inst));
                host.push(register(inst));
            }
        }
    }
    quote! {
        #[cfg(target_arch = "nvptx64")]
        const _: () = { #device };
        #(
            #[cfg(not(target_arch = "nvptx64"))]
            #host
        )*
    }
}
