import { defineConfig } from 'vitepress'

// no cleanUrls: VitePress's default (false) builds and links page.html
export default defineConfig({
  title: 'Hard headings',
  base: '/hard/',
  sitemap: { hostname: 'https://hard.example.dev' },
})
